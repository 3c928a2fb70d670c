import { defineConfig } from 'tsup'

// One build: the library as ESM (dist/index.js) + CJS (dist/index.cjs) with declarations for
// both (index.d.ts / index.d.cts), and the conformance driver (conformance/DRIVER.md), run as
// `node sdk-node/dist/driver.js`.
export default defineConfig({
  entry: { index: 'src/index.ts', driver: 'src/driver.ts' },
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts' } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  platform: 'node',
  external: ['iii-sdk', 'zod'],
})
