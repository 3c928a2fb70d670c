import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeCommandLine, topLevelEntries } from '../../src/driver-line.js'

describe('driver command lines', () => {
  it('keeps duplicate top-level keys in order', () => {
    assert.deepEqual(topLevelEntries('{"id":1,"cmd":"skill","id":"a/b","markdown":"# {\\"x\\"}"}'), [
      ['id', 1],
      ['cmd', 'skill'],
      ['id', 'a/b'],
      ['markdown', '# {"x"}'],
    ])
    assert.deepEqual(topLevelEntries(' { } '), [])
    assert.deepEqual(topLevelEntries('{"output":{"a":[1,{"b":"]}"}]},"n":-1.5e3,"t":true,"z":null}'), [
      ['output', { a: [1, { b: ']}' }] }],
      ['n', -1500],
      ['t', true],
      ['z', null],
    ])
  })

  it('refuses what is not one JSON object', () => {
    for (const bad of ['[1]', '"x"', '{"a":1', '{"a":1}x', '{"a" 1}', '{a:1}', '{"a":tru}', '']) {
      assert.throws(() => topLevelEntries(bad), SyntaxError, bad)
    }
  })

  it('splits the frame id from the command arguments', () => {
    assert.deepEqual(decodeCommandLine('{"id":7,"cmd":"section","path":"a/b","output":{"x":1}}'), {
      id: 7,
      cmd: 'section',
      args: { path: 'a/b', output: { x: 1 } },
    })
  })

  it('reads the skill / function id argument from a second id key or its unambiguous alias', () => {
    assert.deepEqual(decodeCommandLine('{"id":3,"cmd":"skill","id":"resend","markdown":"# r"}').args, {
      id: 'resend',
      markdown: '# r',
    })
    assert.deepEqual(decodeCommandLine('{"id":3,"cmd":"skill","skill_id":"resend","markdown":"# r"}').args['id'], 'resend')
    assert.deepEqual(decodeCommandLine('{"id":4,"cmd":"function","fixture":"echo","function_id":"demo::echo"}').args['id'], 'demo::echo')
    const single = decodeCommandLine('{"cmd":"skill","id":"resend","markdown":"# r"}')
    assert.equal(single.args['id'], 'resend')
    assert.equal(decodeCommandLine('{"id":5,"cmd":"skill","markdown":"# r"}').args['id'], undefined)
  })
})
