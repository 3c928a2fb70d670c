package skillsprotocol

// Unpublishing bundles published over iii: their publisher (the same
// connection, or any connection of the same scoped token) or the holder
// of the registry's admin token removes versions, which frees the
// publisher's share of the caps.

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/sdk-go/rules"
	"github.com/iii-skills/skills/server/internal/kv"
)

// UnpublishRequest is the payload of skills::unpublish-bundle: a bundle
// name, a version (empty: every version the caller may remove) and the
// registry's admin token to remove another publisher's versions.
type UnpublishRequest struct {
	Name       string `json:"name"`
	Version    string `json:"version,omitempty"`
	AdminToken string `json:"admin_token,omitempty"`
}

// UnpublishResult names the versions removed.
type UnpublishResult struct {
	Name     string   `json:"name"`
	Versions []string `json:"versions"`
}

// SetAdminToken sets the token that lets skills::unpublish-bundle remove
// any publisher's bundle (the registry's --admin-token). Call it before
// the client connects.
func (r *Runtime) SetAdminToken(token string) { r.opts.AdminToken = token }

// Unpublish removes published versions of req.Name: record first (a crash
// then leaves unreferenced contents, never a record without them), then
// its contents, then the catalog entry.
func (r *Runtime) Unpublish(ctx context.Context, req UnpublishRequest) (UnpublishResult, error) {
	if !ValidBundleName(req.Name) {
		return UnpublishResult{}, iii.NewInvocationError(rules.CodeInvalidArguments,
			fmt.Sprintf("%s: name %q must be a bundle name such as acme.crm.sync", rules.FnUnpublishBundle, req.Name))
	}
	admin := r.opts.AdminToken != "" && subtle.ConstantTimeCompare([]byte(req.AdminToken), []byte(r.opts.AdminToken)) == 1
	if req.AdminToken != "" && !admin {
		return UnpublishResult{}, iii.NewInvocationError(rules.CodeForbidden,
			fmt.Sprintf("forbidden: admin_token is not the registry's admin token (%s)", adminTokenHint(r.opts.AdminToken)))
	}
	who := r.publisherOf(ctx)
	r.pubs.mu.Lock()
	defer r.pubs.mu.Unlock()
	var keys []string
	for k, rec := range r.pubs.records {
		if rec.Name == req.Name && (req.Version == "" || rec.Version == req.Version) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		what := req.Name
		if req.Version != "" {
			what += " " + req.Version
		}
		return UnpublishResult{}, iii.NewInvocationError(rules.CodeNotFound, fmt.Sprintf("%s: bundle %s is not published here", rules.FnUnpublishBundle, what))
	}
	if !admin {
		mine := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return who == "" || r.pubs.records[k].Publisher != who })
		if len(mine) == 0 || req.Version != "" && len(mine) < len(keys) {
			r.log.Warn("skills protocol: unpublish refused: not the publisher", "name", req.Name, "version", req.Version, "caller", who)
			return UnpublishResult{}, iii.NewInvocationError(rules.CodeForbidden, fmt.Sprintf(
				"forbidden: %s of bundle %s was published by another publisher; only its publisher (the same connection, or any connection of the same scoped token) or the registry's admin token (admin_token) may unpublish it",
				versionWord(req.Version), req.Name))
		}
		keys = mine
	}
	res := UnpublishResult{Name: req.Name, Versions: []string{}}
	for _, k := range keys {
		rec := r.pubs.records[k]
		if _, err := kv.Delete(ctx, r.opts.State, r.opts.BundleScope, k); err != nil {
			return res, fmt.Errorf("%s: remove %s: %w", rules.FnUnpublishBundle, k, err)
		}
		r.dropFiles(ctx, k, len(rec.Files)-1)
		r.dropSharedCopy(ctx, k, len(rec.Files))
		r.pub.RemoveVersion(NameToID(rec.Name), rec.Version)
		delete(r.pubs.records, k)
		r.pubs.count(rec, -1)
		res.Versions = append(res.Versions, rec.Version)
		r.log.Info("skills protocol: bundle unpublished", "name", rec.Name, "version", rec.Version, "publisher", rec.Publisher, "by", who, "admin", admin)
	}
	return res, nil
}

// dropSharedCopy removes the shared copy of bundle key (cluster.go), if
// bundles are shared: no registry instance copies it again (this one at
// its next re-list included). Instances that copied it already keep their
// own copy until it is unpublished there too.
func (r *Runtime) dropSharedCopy(ctx context.Context, key string, files int) {
	if !r.shared.enabled() {
		return
	}
	// The record first: without it no instance reads the files.
	if _, err := kv.Delete(ctx, r.shared.state, SharedBundleScope, key); err != nil {
		r.log.Warn("skills protocol: the shared copy of an unpublished bundle was not removed; other instances may still copy it", "bundle", key, "err", err)
		return
	}
	for i := range files {
		_, _ = kv.Delete(ctx, r.shared.state, SharedBundleScope+"-files", fileKey(key, i))
	}
}

func versionWord(v string) string {
	if v == "" {
		return "every version"
	}
	return "version " + v
}

func adminTokenHint(configured string) string {
	if configured == "" {
		return "none is configured: set --admin-token"
	}
	return "the one given with --admin-token"
}

// unpublishHandler serves skills::unpublish-bundle.
func (r *Runtime) unpublishHandler(ctx context.Context, data json.RawMessage) (any, error) {
	var req UnpublishRequest
	if err := json.Unmarshal(data, &req); err != nil || strings.TrimSpace(req.Name) == "" {
		return nil, iii.NewInvocationError(rules.CodeInvalidArguments,
			fmt.Sprintf("%s: payload must be {\"name\", \"version\"?, \"admin_token\"?}: %v", rules.FnUnpublishBundle, err))
	}
	return r.Unpublish(ctx, req)
}
