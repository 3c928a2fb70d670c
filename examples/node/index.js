// @ts-check
// The upstream `resend` publisher, in Node, under its own namespace `resend-node` (the Go and
// Python examples use `resend-go` and `resend-python`, so all three can run at once): a nested
// skill tree (router `resend-node`, group `resend-node/email`, leaves `resend-node/email/send`
// and `resend-node/email/track`), a live section at iii://fn/resend-node/health and a
// typed `/send-email-node` prompt.
//
//   make run                                              # the standalone registry
//   III_URL=ws://127.0.0.1:49134 node examples/node/index.js
import { readFileSync } from 'node:fs'
import { registerWorker } from 'iii-sdk'
import { createPublisher, engineUrl } from 'iii-skills'
import { z } from 'zod'

// engineUrl(): $III_URL, else ws://127.0.0.1:49134; a malformed address throws here, at once.
const iii = registerWorker(engineUrl(), {
  workerName: 'resend-example',
})
const skills = createPublisher(iii)

// 1. Top-level router: a small body that links to its children.
skills.skill(
  'resend-node',
  '# resend-node\n\nEmail provider integration.\n\n' +
    '- [`email`](iii://resend-node/email) — sending and tracking\n\n' +
    'Live status check: [`health`](iii://fn/resend-node/health)\n',
)

// 2. Mid-level group, itself a router into its own children.
skills.skill(
  'resend-node/email',
  '# resend-node/email\n\nEmail flows.\n\n' +
    '- [`send`](iii://resend-node/email/send) — outbound\n' +
    '- [`track`](iii://resend-node/email/track) — webhooks + status\n',
)

// 3. The leaf the agent reads once it decides to drill in.
skills.skill(
  'resend-node/email/send',
  readFileSync(new URL('./docs/resend-email-send.md', import.meta.url), 'utf8'),
)
skills.skill(
  'resend-node/email/track',
  readFileSync(new URL('./docs/resend-email-track.md', import.meta.url), 'utf8'),
)

// 4. A section: iii://fn/resend-node/health calls resend-node::health and serves its output.
const startedAt = Date.now()
let healthChecks = 0
const healthUri = skills.section(
  'resend-node/health',
  () => {
    healthChecks++
    const uptime = Math.round((Date.now() - startedAt) / 1000)
    return {
      content:
        '# Resend health\n\n' +
        `API: ok. Worker up ${uptime}s; this is health check #${healthChecks}, ` +
        `served at ${new Date().toISOString()}.`,
    }
  },
  { description: 'Live operational health for the resend integration.' },
)

// 5. A slash-command with typed arguments; the argument list shown to clients comes from
//    the zod object, and arguments are checked before the handler runs.
skills.prompt(
  {
    name: 'send-email-node',
    description: 'Compose and send an email',
    args: z.object({
      to: z.string().describe('Recipient address'),
      subject: z.string().describe('Subject line'),
    }),
    functionId: 'resend-node::send_email_prompt',
  },
  ({ to, subject }) => ({
    content: `Compose an email to ${to} with the subject "${subject}". Be concise and friendly.`,
  }),
)

const { registered, rejected } = await skills.start()
if (rejected.length > 0) {
  // Each refusal was logged with its code, holder and advice: say so and stop.
  console.error(`resend example: the registry refused ${rejected.map((r) => `${r.kind} ${r.name} (${r.code})`).join(', ')}`)
  await skills.close({ unregister: true })
  await iii.shutdown()
  process.exit(1)
}
console.info(
  registered
    ? `resend example: skills, ${healthUri} and /send-email-node are registered; Ctrl-C to stop`
    : 'resend example: not registered with the skills registry; still serving the section and prompt',
)

// On Ctrl-C / SIGTERM every example unregisters what it published (its own namespace only),
// so no skill or prompt is left pointing at a stopped worker
// (docs/coming-from-upstream.md#the-examples).
async function shutdown() {
  await skills.close({ unregister: true })
  await iii.shutdown()
  process.exit(0)
}
process.once('SIGINT', shutdown)
process.once('SIGTERM', shutdown)
