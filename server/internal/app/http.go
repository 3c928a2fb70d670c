package app

// The HTTP listener: /mcp, /rpc (with rpc_path), the web page at / and the
// probes, for the assembled server and for `skills mcp`.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"

	iii "github.com/iii-skills/skills/sdk-go/iii"
	"github.com/iii-skills/skills/server/internal/core"
	"github.com/iii-skills/skills/server/internal/downloads"
	"github.com/iii-skills/skills/server/internal/health"
	"github.com/iii-skills/skills/server/internal/httpguard"
	skillsmcp "github.com/iii-skills/skills/server/internal/mcp"
	"github.com/iii-skills/skills/server/internal/observe"
	"github.com/iii-skills/skills/server/internal/skillsprotocol"
	"github.com/iii-skills/skills/server/internal/worker"
)

// HTTPServer is what one HTTP listener serves.
type HTTPServer struct {
	// Addr is where it listens (host:port; port 0 picks one).
	Addr string
	// Client is the MCP server's iii client: the engine's listings and the
	// functions behind tools.
	Client *iii.Client
	// Registry is the registry MCP serves: core.Local in the registry's
	// own process (no engine hop), core.Remote from `skills mcp`.
	Registry core.Registry
	// Door is the listener's Host, Origin and token rules and the MCP
	// session limits.
	Door skillsmcp.HTTPOptions
	// MCP carries the tool options (NoSkillTools, AllowSideEffects and its
	// setting's name); Registry, Version and Logger are filled in.
	MCP skillsmcp.Options
	// Runtime, when set, serves the Skills Protocol at RPCPath (and its
	// tool definitions at RPCPath/tools) behind the same door.
	Runtime *skillsprotocol.Runtime
	RPCPath string
	// Page, when set, serves the web page at / (server/internal/web).
	Page *webSource
	// Ready is /readyz (nil: always ready).
	Ready  health.Check
	Logger *slog.Logger
	// Metrics, when set, is GET /metrics behind the same door.
	Metrics http.Handler
	// observability reports the MCP sessions (nil: `skills mcp`).
	observability *observability
}

// StartHTTP serves h until ctx ends and returns the address it listens on
// and a func that stops it and waits.
func StartHTTP(ctx context.Context, h HTTPServer) (bound net.Addr, stop func(), err error) {
	log := h.Logger
	if log == nil {
		log = slog.Default()
	}
	client, opts, rt, rpcPath, page := h.Client, h.Door, h.Runtime, h.RPCPath, h.Page
	ln, err := net.Listen("tcp", h.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", h.Addr, err)
	}
	srv := skillsmcp.New(client, MCPOptions(h.MCP, h.Registry, log))
	if h.observability != nil {
		h.observability.connections(kindMCPSession, srv.SessionCount)
	}
	ctx, cancel := context.WithCancel(ctx)
	if err := srv.Start(ctx); err != nil {
		cancel()
		_ = ln.Close()
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serveHTTP(ctx, ln, srv, h, webPage(page, client, log), log); err != nil {
			log.Error("MCP endpoint stopped", "err", err)
		}
	}()
	log.Info(fmt.Sprintf("MCP endpoint http://%s%s", ln.Addr(), skillsmcp.Path), "auth", opts.Token != "")
	logAllowedHosts(log, "the HTTP endpoint", opts.AllowedHosts)
	if rt != nil && rpcPath != "" {
		log.Info(fmt.Sprintf("Skills Protocol endpoint http://%s%s", ln.Addr(), rpcPath), "auth", opts.Token != "", "sandbox", sandboxState(rt))
	}
	if page != nil {
		log.Info(fmt.Sprintf("web page http://%s/", ln.Addr()), "auth", opts.Token != "")
	}
	log.Info(fmt.Sprintf("skills index http://%s%s", ln.Addr(), downloads.IndexPath), "auth", opts.Token != "")
	if !httpguard.IsLoopbackAddr(ln.Addr().String()) && opts.Token == "" {
		log.Warn("SECURITY: the MCP endpoint listens on a non-loopback address without a token: anyone who can reach "+
			ln.Addr().String()+" can call every visible function; set --mcp-token / "+EnvMCPToken+" or bind 127.0.0.1", "addr", ln.Addr().String())
	} else if names := publicNames(opts.AllowedHosts); len(names) > 0 && opts.Token == "" {
		// A proxy forwards these names to the loopback listener: what it
		// exposes is as open as a non-loopback address. Not refused: the
		// proxy may authenticate (basic auth, SSO, client certificates),
		// which the registry cannot see.
		log.Warn("SECURITY: the HTTP endpoints answer to "+strings.Join(names, ", ")+" (--mcp-allow-host, --public-url) without a token: "+
			"anyone who reaches a proxy forwarding that name can call every visible function, run code through /rpc and act on the web page; "+
			"set --mcp-token / "+EnvMCPToken+", or make the proxy authenticate", "hosts", names)
	}
	return ln.Addr(), func() {
		cancel()
		<-done
		_ = srv.Close()
	}, nil
}

// MCPOptions completes the tool options of an MCP server of reg, which
// also serves reg's catalog as the MCP Skills extension.
func MCPOptions(tools skillsmcp.Options, reg core.Registry, log *slog.Logger) skillsmcp.Options {
	tools.Version, tools.Logger, tools.Registry, tools.SkillsExtension = worker.Version, log, reg, true
	return tools
}

func sandboxState(rt *skillsprotocol.Runtime) string {
	if err := rt.Sandbox().Available(); err != nil {
		return err.Error()
	}
	mode, _ := rt.Sandbox().CgroupMode()
	return "bubblewrap (" + string(mode) + ")"
}

// serveHTTP serves, on ln until ctx ends, what h describes: /mcp (srv),
// the probes /healthz and /readyz, the registry's skills as files (the
// discovery index and archives, package downloads), /metrics, with page
// set the web page at /, and the Skills Protocol when h has a runtime and
// an RPC path.
func serveHTTP(ctx context.Context, ln net.Listener, srv *skillsmcp.Server, h HTTPServer,
	page func(httpguard.Policy) (http.Handler, func()), log *slog.Logger) error {
	opts, rt, rpcPath, metrics := h.Door, h.Runtime, h.RPCPath, h.Metrics
	mux := http.NewServeMux()
	// Probes answer outside the door rules (see package health).
	health.Mount(mux, h.Ready)
	opts.ListenAddr = ln.Addr().String()
	mux.Handle(skillsmcp.Path, srv.HTTPHandler(opts))
	if h.Registry != nil {
		// The same door as /mcp: readers of /mcp read these too.
		var obs *observe.Observer
		if h.observability != nil {
			obs = h.observability.obs
		}
		downloads.New(downloads.Options{Registry: h.Registry, Guard: opts.Policy(), Logger: log, Observer: obs}).Mount(mux)
	}
	if metrics != nil {
		// The same door as /mcp: Origin, Host and token.
		mux.Handle("GET /metrics", opts.Policy().Wrap(metrics))
	}
	if page != nil {
		// The page applies the same Host, Origin and token rules itself
		// (its sign-in form must be reachable without the token).
		handler, closePage := page(opts.Policy())
		// Closing ends the page's event streams, which would otherwise
		// hold the server's graceful shutdown until its deadline.
		stopPage := context.AfterFunc(ctx, closePage)
		defer func() {
			if stopPage() {
				closePage()
			}
		}()
		mux.Handle("/", handler)
	}
	if rt != nil && rpcPath != "" {
		// The same door as /mcp: Origin, Host (against DNS rebinding; /rpc
		// runs code) and token.
		guard := opts.Policy()
		mux.Handle(rpcPath, guard.Wrap(rt))
		mux.Handle(strings.TrimSuffix(rpcPath, "/")+"/tools", guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defs, err := skillsprotocol.ToolDefinitions(r.URL.Query().Get("format"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(defs)
		})))
	}
	return skillsmcp.ServeHandler(ctx, ln, mux)
}

// publicNames are the Host patterns that name something beyond this
// machine's loopback interface.
func publicNames(hosts []string) []string {
	var out []string
	for _, h := range hosts {
		name := h
		if host, _, err := net.SplitHostPort(h); err == nil {
			name = host
		}
		if !httpguard.IsLoopbackHost(strings.Trim(name, "[]")) {
			out = append(out, h)
		}
	}
	return out
}

// listenError says that what (a listener) cannot listen on addr, why, and
// which setting chooses another address: a taken port, or one the process
// may not bind, stops start-up the same way for the engine and for HTTP.
func listenError(what, addr, setting string, err error) error {
	cause := err
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		cause = op.Err // "bind: address already in use"
	}
	return fmt.Errorf("%s cannot listen on %s: %v; choose another address with %s", what, addr, cause, setting)
}

// logAllowedHosts says at start which names a listener answers to.
func logAllowedHosts(log *slog.Logger, what string, hosts []string) {
	if len(hosts) > 0 {
		log.Info(what+" also answers to these Host names", "hosts", hosts)
	}
}
