// docs/publishers.md ("Names in each SDK") names every concept in the three SDKs. This test
// holds the Node column to the package's exports (read with the TypeScript compiler, so types
// count too): every name listed exists, and every export (and every public method of
// Publisher) is listed, so renaming one here without the table fails.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import ts from 'typescript'

/** The backticked names of one column of the table (1: Go, 2: Node, 3: Python). */
export function namesTable(column: number): string[] {
  const doc = readFileSync(new URL('../../../docs/publishers.md', import.meta.url), 'utf8').split('\n')
  const start = doc.findIndex((l) => l.startsWith('| concept | Go '))
  assert.ok(start >= 0, 'docs/publishers.md has no names table ("| concept | Go …")')
  const out: string[] = []
  let rows = 0
  for (const line of doc.slice(start + 2)) {
    if (!line.startsWith('|')) break
    const cells = line.replace(/^\||\|$/g, '').split('|')
    assert.equal(cells.length, 5, `names table row: ${line}`)
    rows++
    for (const m of (cells[column] ?? '').matchAll(/`([^`]+)`/g)) out.push(m[1] ?? '')
  }
  assert.ok(rows >= 30 && out.length >= 60, `names table: ${rows} rows, ${out.length} names; did it move?`)
  return out
}

describe('names table (docs/publishers.md)', () => {
  const index = fileURLToPath(new URL('../../src/index.ts', import.meta.url))
  const program = ts.createProgram([index], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
    noLib: true, // only the package's own declarations are read: faster, and enough for names
  })
  const checker = program.getTypeChecker()
  const source = program.getSourceFile(index)
  assert.ok(source)
  const moduleSymbol = checker.getSymbolAtLocation(source)
  assert.ok(moduleSymbol)
  const exported = new Map<string, ts.Symbol>()
  for (const sym of checker.getExportsOfModule(moduleSymbol)) {
    exported.set(sym.name, sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym)
  }
  const memberOf = (owner: string, member: string): boolean => {
    const sym = exported.get(owner)
    if (sym === undefined) return false
    return checker.getDeclaredTypeOfSymbol(sym).getProperty(member) !== undefined
  }
  const listed = namesTable(2)

  it('lists only names the package exports', () => {
    const missing = listed.filter((name) => {
      const dot = name.indexOf('.')
      return dot < 0 ? !exported.has(name) : !memberOf(name.slice(0, dot), name.slice(dot + 1))
    })
    assert.deepEqual(missing, [], 'listed in docs/publishers.md but not exported by iii-skills')
  })

  it('lists every export and every public method of Publisher', () => {
    const seen = new Set(listed)
    const unlisted = [...exported.keys()].filter((name) => !seen.has(name))
    const publisher = exported.get('Publisher')
    assert.ok(publisher)
    for (const prop of checker.getDeclaredTypeOfSymbol(publisher).getProperties()) {
      const isPublic = (prop.declarations ?? []).every(
        (d) => (ts.getCombinedModifierFlags(d) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) === 0,
      )
      if (isPublic && !seen.has(`Publisher.${prop.name}`)) unlisted.push(`Publisher.${prop.name}`)
    }
    assert.deepEqual(unlisted, [], 'exported by iii-skills but not listed in docs/publishers.md')
  })
})
