// The upstream README's Node example, corrected for iii-sdk 0.22.1 (see ../coming-from-upstream.md).
// Run: III_URL=ws://127.0.0.1:49134 node demo.mjs   (make test-dist runs it)
import { registerWorker } from 'iii-sdk'

const iii = registerWorker(process.env.III_URL ?? 'ws://localhost:49134')

iii.registerFunction('demo::guide', async () => ({
  content: '# Demo guide\n\nThe long-form docs for the demo worker.',
}))
iii.registerFunction('demo::greet_prompt', async ({ name = 'world' }) => ({
  content: `Greet ${name} warmly.`,
}))

await iii.trigger({
  function_id: 'skills::register',
  payload: {
    id: 'demo',
    skill: '# demo\n\nA demo worker.\n\nSee [`guide`](iii://fn/demo/guide) for the long version.\n',
  },
})
await iii.trigger({
  function_id: 'prompts::register',
  payload: {
    name: 'greet',
    description: 'Compose a greeting.',
    arguments: [{ name: 'name', description: 'Who to greet', required: true }],
    function_id: 'demo::greet_prompt',
  },
})
console.log('demo registered')
