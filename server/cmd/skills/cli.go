package main

// What every subcommand shares on the command line: help on stdout, and a
// one-line error with a suggestion for a mistyped flag or command instead
// of the whole usage.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/iii-skills/skills/server/internal/app"
)

// parseFlags parses args with fs. --help / -h prints fs's usage on stdout
// (exit 0); a flag fs does not have or a bad value is one line on stderr
// naming the flag (and the one meant, for a near miss) and exit 2.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil {
		return 0, true
	}
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0, false
	}
	fmt.Fprintln(stderr, flagError(fs, err))
	return 2, false
}

// flagError rewords the flag package's error into one line:
// "skills: unknown flag --skill-folder; did you mean --skills-folder? (skills --help lists every flag)".
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, found := strings.CutPrefix(msg, "flag provided but not defined: "); found {
		name = strings.TrimLeft(name, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		line := fmt.Sprintf("%s: unknown flag --%s", fs.Name(), name)
		if near := app.Suggest(name, names); near != "" {
			line += "; did you mean --" + near + "?"
		}
		return line + " (" + fs.Name() + " --help lists every flag)"
	}
	return fs.Name() + ": " + msg + " (" + fs.Name() + " --help lists every flag)"
}

// unknownCommand says that word is no subcommand, with the one meant and
// the list.
func unknownCommand(stderr io.Writer, word string) {
	names := make([]string, len(subcommands))
	for i, c := range subcommands {
		names[i] = c.name
	}
	line := fmt.Sprintf("skills: unknown command %q", word)
	if near := app.Suggest(word, names); near != "" {
		line += "; did you mean skills " + near + "?"
	}
	fmt.Fprintf(stderr, "%s (commands: %s; skills --help lists them with the flags)\n", line, subcommandNames())
}

// help joins the table at init: it reads the table itself.
func init() { subcommands = append(subcommands, subcommand{"help", runHelp}) }

// runHelp is `skills help [COMMAND]`: the usage of skills or of COMMAND,
// on stdout.
func runHelp(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("skills help", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: skills help [COMMAND]  print the usage of skills or of one of its commands (skills help trigger = skills trigger --help)")
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	switch fs.NArg() {
	case 0:
		return runWorker([]string{"--help"}, stdout, stderr)
	case 1:
		for _, c := range subcommands {
			if c.name == fs.Arg(0) && c.name != "help" {
				return c.run([]string{"--help"}, stdout, stderr)
			}
		}
		unknownCommand(stderr, fs.Arg(0))
		return 2
	}
	fmt.Fprintln(stderr, "skills help: give at most one command, e.g. skills help trigger")
	return 2
}

// flagGiven reports whether flag name was on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// printFlags prints the flags declare puts on a new flag set, as
// PrintDefaults does, but those hide says.
func printFlags(out io.Writer, declare func(*flag.FlagSet), hide func(*flag.Flag) bool) {
	all := flag.NewFlagSet("", flag.ContinueOnError)
	declare(all)
	shown := flag.NewFlagSet("", flag.ContinueOnError)
	shown.SetOutput(out)
	all.VisitAll(func(f *flag.Flag) {
		if hide == nil || !hide(f) {
			shown.Var(f.Value, f.Name, f.Usage)
		}
	})
	shown.PrintDefaults()
}
