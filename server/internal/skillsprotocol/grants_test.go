package skillsprotocol_test

import (
	"strings"
	"testing"

	sp "github.com/iii-skills/skills/server/internal/skillsprotocol"
)

// A grant covers a bundle by exact name, by prefix.* (below the prefix,
// not the prefix itself) or "*", and only from its origin.
func TestSecretGrantsMatchNameAndOrigin(t *testing.T) {
	e := newEnv(t, sp.Options{SecretGrants: []sp.SecretGrant{
		{Bundle: "acme.crm.*", Origin: sp.OriginFolder, Names: []string{"CRM"}},
		{Bundle: "acme.mail", Origin: sp.OriginPublished, Names: []string{"MAIL"}},
		{Bundle: "*", Origin: sp.OriginAny, Names: []string{"EVERYONE"}},
	}})
	for _, c := range []struct {
		name, origin string
		asks         []string
		ungranted    string
	}{
		{"acme.crm.sync", sp.OriginFolder, []string{"CRM", "EVERYONE"}, ""},
		{"acme.crm.a.b", sp.OriginFolder, []string{"CRM"}, ""},
		{"acme.crm", sp.OriginFolder, []string{"CRM"}, "CRM"},
		{"acme.crmx.sync", sp.OriginFolder, []string{"CRM"}, "CRM"},
		{"acme.crm.sync", sp.OriginPublished, []string{"CRM", "EVERYONE"}, "CRM"},
		{"acme.mail", sp.OriginPublished, []string{"MAIL"}, ""},
		{"acme.mail", sp.OriginFolder, []string{"MAIL"}, "MAIL"},
		{"acme.mail.x", sp.OriginPublished, []string{"MAIL", "III_ENGINE_TOKEN"}, "MAIL,III_ENGINE_TOKEN"},
	} {
		m := &sp.Manifest{Name: c.name, Permissions: sp.Permissions{Secrets: c.asks}}
		if got := strings.Join(e.rt.Ungranted(m, c.origin), ","); got != c.ungranted {
			t.Errorf("%s from %s asking %v: ungranted %q, want %q", c.name, c.origin, c.asks, got, c.ungranted)
		}
	}
	for _, g := range []sp.SecretGrant{
		{Bundle: "", Origin: "folder", Names: []string{"A"}},
		{Bundle: "acme.*.x", Origin: "folder", Names: []string{"A"}},
		{Bundle: "acme", Origin: "", Names: []string{"A"}},
		{Bundle: "acme", Origin: "folder"},
		{Bundle: "acme", Origin: "folder", Names: []string{"A B"}},
	} {
		if g.Validate() == nil {
			t.Errorf("grant %+v accepted", g)
		}
	}
}
