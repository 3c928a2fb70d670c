export {
  Publisher,
  createPublisher,
  type ChangeOp,
  type CloseOptions,
  type History,
  type HistoryVersion,
  type JsonValue,
  type LabelMove,
  type PromptChange,
  type PromptDefinition,
  type PromptMessage,
  type PromptResult,
  type PublisherClient,
  type PublisherEvents,
  type PublisherOptions,
  type SectionResult,
  type SkillChange,
  type TypedFunctionSpec,
  type Unsubscribe,
  type VersionMeta,
} from './publisher.js'
export {
  DEFAULT_BACKOFF,
  isNotFound,
  isNotFoundError,
  type BackoffOptions,
  type Holder,
  type Rejection,
  type RegistrationResult,
} from './registrar.js'
export { DEFAULT_ENGINE_URL, engineUrl } from './engine-url.js'
export { canonicalPrompt, type PromptDefinitionContent } from './signing.js'
export { deriveArguments, checkArguments, type ArgumentKind, type ArgumentSpec, type ArgsSchema } from './arguments.js'
export {
  ValidationError,
  validateSkillId,
  validateSkillBody,
  validatePromptName,
  validatePrompt,
  skillIdError,
  skillBodyError,
  promptError,
  sectionFunctionId,
  type PromptArgument,
} from './validation.js'
export { consoleLogger, type Logger } from './logger.js'
export { isInternalFunctionId, msg as messages } from './messages.js'
export { VERSION } from './version.js'
