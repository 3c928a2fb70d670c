// Builds the registry server the integration tests run against (`make build` in the repo
// root → bin/skills), unless SKILLS_BIN already names a binary (the Makefile sets it).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

if (process.env.SKILLS_BIN) {
  if (!existsSync(process.env.SKILLS_BIN)) {
    console.error(`SKILLS_BIN=${process.env.SKILLS_BIN} does not exist`)
    process.exit(1)
  }
} else {
  const root = fileURLToPath(new URL('../../', import.meta.url))
  const r = spawnSync('make', ['build'], { cwd: root, stdio: 'inherit' })
  if (r.status !== 0) {
    console.error('`make build` failed: the integration tests need bin/skills')
    process.exit(r.status ?? 1)
  }
}
