package registry

import "fmt"

// Error constructors for the read paths. Each returns a plain error whose
// text is the exact upstream message; causes are wrapped with %w so
// errors.Is / errors.As still see them.

// ErrSkillNotFound: "Skill not found: {id}".
func ErrSkillNotFound(id string) error { return fmt.Errorf(FmtSkillNotFound, id) }

// ErrPromptNotFound: "Prompt not found: {name}".
func ErrPromptNotFound(name string) error { return fmt.Errorf(FmtPromptNotFound, name) }

// ErrHiddenSection: a section URI resolved to a hidden function id.
func ErrHiddenSection(functionID string) error { return fmt.Errorf(FmtHiddenSection, functionID) }

// ErrHiddenPrompt: a stored prompt points at a hidden function id.
func ErrHiddenPrompt(functionID string) error { return fmt.Errorf(FmtHiddenPrompt, functionID) }

// ErrTrigger: "trigger {fid}: {err}".
func ErrTrigger(functionID string, err error) error { return fmt.Errorf(FmtTrigger, functionID, err) }

// ErrState: "{fn}: {err}" for a failed state call fn (upstream's
// "state::get: {err}").
func ErrState(fn string, err error) error { return fmt.Errorf(FmtStateCall, fn, err) }

// ErrDecodeSkill: "decode stored skill {id}: {err}".
func ErrDecodeSkill(id string, err error) error { return fmt.Errorf(FmtDecodeSkill, id, err) }

// ErrDecodePrompt: "decode stored prompt {name}: {err}".
func ErrDecodePrompt(name string, err error) error { return fmt.Errorf(FmtDecodePrompt, name, err) }

// ErrFetchNoInput: "Provide uri or a non-empty uris array".
func ErrFetchNoInput() error { return fmt.Errorf("%s", MsgFetchNoInput) }

// ErrFetchInvalidURI: "Invalid URI (must start with iii://): {entry}".
func ErrFetchInvalidURI(entry string) error { return fmt.Errorf(FmtFetchInvalidURI, entry) }

// ErrURIScheme: "Resource URI must start with iii://: {uri}".
func ErrURIScheme(uri string) error { return fmt.Errorf(FmtURIScheme, uri) }

// CheckSection returns ErrHiddenSection when functionID is hidden.
func CheckSection(functionID string) error {
	if IsHidden(functionID) {
		return ErrHiddenSection(functionID)
	}
	return nil
}

// CheckPromptHandler returns ErrHiddenPrompt when functionID is hidden.
func CheckPromptHandler(functionID string) error {
	if IsHidden(functionID) {
		return ErrHiddenPrompt(functionID)
	}
	return nil
}
