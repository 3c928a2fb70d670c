package app_test

import (
	"context"
	"fmt"
	"log"

	"github.com/iii-skills/skills/server/internal/app"
)

// A whole server on free loopback ports: the embedded engine, the
// registry worker and the HTTP listener, as `skills --standalone` runs it.
func ExampleStart() {
	cfg := app.DefaultConfig() // or app.Load("config.yaml")
	cfg.Engine.Standalone, cfg.Engine.URL, cfg.Engine.DataDir = true, "ws://127.0.0.1:0", "/tmp/skills-example"
	cfg.HTTP.Addr = "127.0.0.1:0"
	srv, err := app.Start(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	fmt.Println("workers dial", srv.EngineURL, "and MCP clients", srv.HTTPURL+"/mcp")
}
