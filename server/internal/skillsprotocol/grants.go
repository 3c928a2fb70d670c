package skillsprotocol

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/iii-skills/skills/server/internal/catalog"
)

// Bundle origins a secret grant names: where the bundle came from.
const (
	// OriginFolder: a bundle the operator serves from a folder
	// (--sp-bundles or a skills folder).
	OriginFolder = "folder"
	// OriginPublished: a bundle published over iii (skills::publish-bundle).
	OriginPublished = "published"
	// OriginDownloaded: a bundle directory::skills::download wrote into a
	// skills folder (any engine client may start a download, so it is not
	// the operator's even though it sits in the operator's folder).
	OriginDownloaded = "downloaded"
	// OriginAny: every origin (folder, published, downloaded).
	OriginAny = "any"
)

// SecretGrant gives the bundles whose name matches Bundle, from Origin,
// the secrets Names. A manifest's [permissions] secrets = [...] only asks:
// a bundle receives a secret when a grant covers its name, origin and the
// secret, so no bundle author picks server secrets (tokens, cloud keys)
// out of the server's environment.
type SecretGrant struct {
	// Bundle is a bundle name (acme.crm.sync), a name prefix ending in
	// ".*" (acme.crm.* matches acme.crm.sync and acme.crm.a.b, not
	// acme.crm itself), or "*" for every bundle.
	Bundle string `yaml:"bundle" json:"bundle"`
	// Origin is "folder", "published", "downloaded" or "any".
	Origin string `yaml:"origin" json:"origin"`
	// Names are the secrets granted (environment variable names).
	Names []string `yaml:"names" json:"names"`
}

// Validate reports what is wrong with g, naming the field.
func (g SecretGrant) Validate() error {
	switch p := g.Bundle; {
	case p == "":
		return fmt.Errorf(`bundle is required (a bundle name such as acme.crm.sync, a prefix such as acme.crm.*, or "*")`)
	case p == "*":
	case strings.HasSuffix(p, ".*"):
		if !ValidBundleName(strings.TrimSuffix(p, ".*")) {
			return fmt.Errorf("bundle %q: the part before .* must be a bundle name of lowercase letters, digits and dots", p)
		}
	case !ValidBundleName(p):
		return fmt.Errorf(`bundle %q must be a bundle name such as acme.crm.sync, a prefix such as acme.crm.*, or "*"`, p)
	}
	switch g.Origin {
	case OriginFolder, OriginPublished, OriginDownloaded, OriginAny:
	case "":
		return fmt.Errorf(`origin is required for bundle %q: "folder" (bundles the operator serves from a folder), "published" (published over iii), "downloaded" (written into a skills folder by the directory's download) or "any"`, g.Bundle)
	default:
		return fmt.Errorf(`origin %q of bundle %q must be "folder", "published", "downloaded" or "any"`, g.Origin, g.Bundle)
	}
	if len(g.Names) == 0 {
		return fmt.Errorf("names is required for bundle %q: the secrets granted, such as [CRM_TOKEN]", g.Bundle)
	}
	for _, n := range g.Names {
		if !secretRe.MatchString(n) {
			return fmt.Errorf("names entry %q of bundle %q must be an environment variable name (letters, digits, underscore)", n, g.Bundle)
		}
	}
	return nil
}

// matches reports whether g covers bundle name from origin.
func (g SecretGrant) matches(name, origin string) bool {
	if g.Origin != OriginAny && g.Origin != origin {
		return false
	}
	switch {
	case g.Bundle == "*":
		return true
	case strings.HasSuffix(g.Bundle, ".*"):
		return strings.HasPrefix(name, strings.TrimSuffix(g.Bundle, "*"))
	}
	return g.Bundle == name
}

// bundleOrigin is "published" for a bundle published over iii,
// "downloaded" for one a download wrote into a skills folder, else
// "folder".
func bundleOrigin(e *catalog.Entry) string {
	switch {
	case e.Origin.Source == SourcePublishedBundles:
		return OriginPublished
	case e.Origin.Downloaded:
		return OriginDownloaded
	}
	return OriginFolder
}

// granted reports whether a grant gives secret to bundle name from origin.
func (r *Runtime) granted(name, origin, secret string) bool {
	for _, g := range r.opts.SecretGrants {
		if g.matches(name, origin) && slices.Contains(g.Names, secret) {
			return true
		}
	}
	return false
}

// Ungranted lists the secrets m asks for that no grant gives to it from
// origin ("folder", "published" or "downloaded").
func (r *Runtime) Ungranted(m *Manifest, origin string) []string {
	var out []string
	for _, s := range m.Permissions.Secrets {
		if !r.granted(m.Name, origin, s) {
			out = append(out, s)
		}
	}
	return out
}

// missingGrantError is the publish-time refusal of a bundle asking for
// secrets no grant covers.
func missingGrantError(m *Manifest, missing []string) error {
	return fmt.Errorf("skill.toml asks for %s %s in [permissions] secrets, which no grant gives to published bundle %s: "+
		"the operator must grant %s in config.yaml (skills_protocol.secret_grants: [{bundle: %q, origin: published, names: [%s]}]) "+
		"or the bundle must not ask for %s",
		secretWord(missing), quoteList(missing), m.Name, itThem(missing), m.Name, strings.Join(missing, ", "), itThem(missing))
}

func secretWord(names []string) string {
	if len(names) == 1 {
		return "secret"
	}
	return "secrets"
}

func itThem(names []string) string {
	if len(names) == 1 {
		return "it"
	}
	return "them"
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// secretEnv is the environment of a run of v: the secrets its manifest
// asks for that a grant gives it, with values from Options.Secrets, else
// the server's environment. Secrets asked for but not granted are left
// out (folder bundles are reported when they load; published ones are
// refused at publish).
func (r *Runtime) secretEnv(v skillView) map[string]string {
	env := map[string]string{}
	origin := bundleOrigin(v.e)
	for _, n := range v.manifest.Permissions.Secrets {
		if !r.granted(v.name, origin, n) {
			continue
		}
		if val, ok := r.opts.Secrets[n]; ok {
			env[n] = val
		} else if val, ok := os.LookupEnv(n); ok {
			env[n] = val
		}
	}
	return env
}

// ReportUngranted logs, once per load, a folder bundle that asks for
// secrets no grant gives it: it is served and runs, without them. It
// returns the message (empty when every secret is granted), the
// diagnostic skills folders list for the bundle.
func (r *Runtime) ReportUngranted(e *catalog.Entry) string {
	m, ok := e.Extra.(*Manifest)
	if !ok || m == nil {
		return ""
	}
	missing := r.Ungranted(m, bundleOrigin(e))
	if len(missing) == 0 {
		return ""
	}
	msg := fmt.Sprintf("bundle %s %s asks for %s %s, which no grant gives to %s bundles of that name: it runs without %s (grant with skills_protocol.secret_grants in config.yaml)",
		m.Name, m.Version, secretWord(missing), quoteList(missing), bundleOrigin(e), itThem(missing))
	r.log.Warn("skills protocol: secret not granted", "name", m.Name, "version", m.Version, "secrets", missing, "origin", bundleOrigin(e), "detail", msg)
	return msg
}
