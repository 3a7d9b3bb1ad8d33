// Command bd-claim atomically claims one ready issue of a Beads workspace
// for an agent. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/bdclaim/bd-claim/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
