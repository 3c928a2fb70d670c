package main

// Host names `skills mcp --allow-host` answers to, over the config key
// mcp_allow_host (the server's own flags are app.Config.AddFlags'). A flag
// replaces its config key (the lists are not merged), like --skills-folder.

import (
	"flag"

	"github.com/iii-skills/skills/server/internal/httpguard"
)

// allowedHosts is the flag's list when the flag was given, else the config
// key's, checked with httpguard.CheckHostPatterns.
func allowedHosts(fs *flag.FlagSet, flagName, flagValue string, fromConfig []string, configKey string) ([]string, error) {
	hosts, setting := fromConfig, configKey
	if flagGiven(fs, flagName) {
		hosts, setting = splitList(flagValue), "--"+flagName
	}
	if err := httpguard.CheckHostPatterns(setting, hosts); err != nil {
		return nil, err
	}
	return hosts, nil
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
