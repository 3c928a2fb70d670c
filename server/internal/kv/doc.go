// Package kv is the one way the server reaches durable state: a small
// key/value interface (Store: get, list, a commit of several keys) with one
// implementation per place the bytes live.
//
//	Local(st)           a store.Store this process owns (the Skills
//	                    Protocol's own file, tests)
//	Engine(eng, writer) the embedded engine's state, in-process: its
//	                    group commit and fsync before acknowledging, and
//	                    the state trigger events a state::set fires
//	III(client, t)      the engine's state::* functions over iii (any
//	                    engine; state other registry instances may share)
//
// Every reader and writer of state goes through Store, so no caller picks
// a path by testing which functions it was given: the store it holds says
// whether other instances share it (Shared), and a commit is one
// transaction where the backend has them (Local, Engine) and concurrent
// writes where it has not (III).
package kv
