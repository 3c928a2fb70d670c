package web

import (
	"net/http"

	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/scope"
)

// Who may change the registry from the page. Reading the page takes the
// listener token (Guard.Token, the MCP token every agent and reader
// holds); changing it (unregister, roll back, move a label) takes a
// token that says who acts, typed into the action's form each time:
//
//   - the registry's admin token: the operator, on any id (and protected
//     labels);
//   - a team's engine token (engine_tokens): that team, as its publishers
//     over iii: ids and prompt names of its namespaces only, refused
//     otherwise by the registry itself (OUT_OF_SCOPE), and an id another
//     connection holds stays that connection's while it lives.
//
// The listener token alone changes nothing: it is shared with every
// agent, so holding it must not remove a team's skills. The action token
// is never kept in a cookie, logged or rendered.

// Actor is who an action's token names.
type Actor struct {
	// Caller is who the registry sees act: core.Operator() for the admin
	// token, the team's scope for a team token.
	Caller core.Caller
	// Name says who in the server log ("admin", "team acme").
	Name string
	// AdminToken is passed on label moves (the admin's own token).
	AdminToken string
}

// ActionTokens builds Options.ActionTokens from the registry's admin
// token and the teams' engine tokens, compared in constant time.
//
// With no teams (no engine_tokens) there are no tenants to keep apart:
// the listener's own token (listenerToken, --mcp-token) then acts as the
// operator too, as the one person who may read the page may also change
// it; protected labels still move only with the admin token, or with
// pageAdminToken (--web-admin-labels). With teams, listenerToken is
// ignored: it only lets a reader see the page.
func ActionTokens(adminToken string, teams []Team, listenerToken, pageAdminToken string) func(string) (Actor, bool) {
	if len(teams) > 0 {
		listenerToken = ""
	}
	return func(tok string) (Actor, bool) {
		if tok == "" {
			return Actor{}, false
		}
		if adminToken != "" && tokenEqual(tok, adminToken) {
			return Actor{Caller: core.Operator(), Name: "admin", AdminToken: adminToken}, true
		}
		if listenerToken != "" && tokenEqual(tok, listenerToken) {
			return Actor{Caller: core.Operator(), Name: "operator", AdminToken: pageAdminToken}, true
		}
		for _, t := range teams {
			if tokenEqual(tok, t.Token) {
				return Actor{Caller: core.Caller{Caller: scope.Caller{Token: t.Name, Namespaces: t.Namespaces, Nested: t.Nested}},
					Name: "team " + t.Name}, true
			}
		}
		return Actor{}, false
	}
}

// Team is one team's engine token (engine_tokens) as the page checks it.
type Team struct {
	Name, Token string
	Namespaces  []string
	// Nested are other teams' namespaces inside this team's
	// (scope.Nested): their prompt names are not this team's.
	Nested []string
}

// actor reads who the action's form names; why (with an HTTP status)
// says why nobody may act.
func (s *Server) actor(r *http.Request, what string) (a Actor, status int, why string) {
	tok := r.PostFormValue("token")
	if tok == "" && s.hasToken(r) {
		// Signed in with the listener token: it acts only where
		// ActionTokens lets it (no teams: the one operator).
		tok = s.opts.Guard.Token
	}
	if s.opts.ActionTokens == nil {
		return Actor{}, http.StatusForbidden, "changing the registry from this page needs the registry's admin token (--admin-token or " +
			"SKILLS_ADMIN_TOKEN) or a team's engine token (engine_tokens in config.yaml), and this server has neither; " +
			"use the skills CLI (skills unregister, skills label, skills rollback) or set one."
	}
	if a, ok := s.opts.ActionTokens(tok); ok {
		return a, 0, ""
	}
	if tok != "" && s.opts.Guard.Token != "" && tokenEqual(tok, s.opts.Guard.Token) {
		return Actor{}, http.StatusForbidden, "the " + s.opts.TokenSetting + " token lets you read this page, not change the registry; " +
			"to " + what + ", enter the registry's admin token or your team's engine token."
	}
	return Actor{}, http.StatusUnauthorized, "the token is missing or wrong; to " + what +
		", enter the registry's admin token or your team's engine token (engine_tokens)."
}
