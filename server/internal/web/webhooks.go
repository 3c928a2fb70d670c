package web

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/iii-skills/skills/server/internal/webhooks"
)

// WebhookAdmin is the webhook deliveries of this instance
// (*webhooks.Dispatcher): each URL's status, the dead letters, a resend.
type WebhookAdmin interface {
	Status() []webhooks.Status
	DeadLetters(ctx context.Context) ([]webhooks.Delivery, error)
	Resend(ctx context.Context, key string) error
}

type deadRow struct {
	Key, ID, URL, SkillID, Type, Error string
	Status, Attempts                   int
	Created, CreatedISO, Dead, DeadISO string
}

type webhooksData struct {
	None      bool
	Endpoints []webhooks.Status
	Dead      []deadRow
	Error     string
	Resent    string
	NeedToken bool
	NoToken   bool
	Setting   string
}

// maxDeadShown bounds the dead letters the page lists (the newest).
const maxDeadShown = 500

// webhooksPage lists each configured URL's deliveries and the dead
// letters, each with a button that queues it again.
func (s *Server) webhooksPage(w http.ResponseWriter, r *http.Request) {
	d := webhooksData{Resent: r.URL.Query().Get("resent"), Setting: s.opts.TokenSetting,
		NoToken: s.opts.Guard.Token == ""}
	if c, err := r.Cookie(tokenCookie); s.opts.Guard.Token != "" && (err != nil || c.Value == "") {
		d.NeedToken = true
	}
	if s.opts.Webhooks == nil {
		d.None = true
		s.render(w, r, http.StatusOK, "webhooks", &page{Title: "Webhooks", Nav: "webhooks", Data: d})
		return
	}
	d.Endpoints = s.opts.Webhooks.Status()
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.CallTimeout)
	defer cancel()
	dead, err := s.opts.Webhooks.DeadLetters(ctx)
	if err != nil {
		d.Error = err.Error()
	}
	if len(dead) > maxDeadShown {
		dead = dead[len(dead)-maxDeadShown:]
	}
	now := time.Now()
	for i := len(dead) - 1; i >= 0; i-- { // newest first
		dl := dead[i]
		d.Dead = append(d.Dead, deadRow{Key: dl.Key, ID: dl.ID, URL: dl.URL, SkillID: dl.SkillID, Type: string(dl.Type),
			Error: dl.LastError, Status: dl.LastStatus, Attempts: dl.Attempts,
			Created: age(dl.CreatedAt, now), CreatedISO: isoTime(dl.CreatedAt), Dead: age(dl.DeadAt, now), DeadISO: isoTime(dl.DeadAt)})
	}
	s.render(w, r, http.StatusOK, "webhooks", &page{Title: "Webhooks", Nav: "webhooks", Data: d})
}

// resendWebhook queues a dead letter again: a same-origin form post with
// the CSRF value and the operator's token (the admin token, or without
// teams the listener token), like every action.
func (s *Server) resendWebhook(w http.ResponseWriter, r *http.Request) {
	a, ok := s.actionAllowed(w, r, "resend a webhook")
	if !ok {
		return
	}
	if !a.Caller.Operator {
		// The receivers are the operator's, not a team's.
		s.fail(w, r, http.StatusForbidden, "Refused: resending a webhook delivery is the operator's; enter the registry's admin token.")
		return
	}
	if s.opts.Webhooks == nil {
		s.fail(w, r, http.StatusNotFound, "No webhook is configured (config webhooks:).")
		return
	}
	key := r.PostFormValue("key")
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.CallTimeout)
	defer cancel()
	if err := s.opts.Webhooks.Resend(ctx, key); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The delivery was not queued again: "+err.Error())
		return
	}
	s.opts.Logger.Info("web: webhook dead letter queued again", "key", key)
	http.Redirect(w, r, "/webhooks?resent="+url.QueryEscape(key), http.StatusSeeOther)
}
