// Package cli is bd-claim's command line: flags, output and exit statuses
// around package claim.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/bdclaim/bd-claim/claim"
)

// Version is bd-claim's version, set at build time with
// -ldflags "-X github.com/bdclaim/bd-claim/cli.Version=v1.2.3".
var Version = "dev"

// Run runs bd-claim with args (without the program name) and returns its
// exit status. It writes results to stdout, logs to stderr, and reads the
// environment only through getenv.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 {
		switch args[0] {
		case "demo":
			return runDemo(ctx, args[1:], stdout, stderr)
		case "version":
			fmt.Fprintf(stdout, "bd-claim %s\n", Version)
			return ExitClaimed
		}
	}
	return runClaim(ctx, args, stdout, stderr, getenv)
}

// options are the parsed flags of a claim.
type options struct {
	req                  claim.Request
	minPriority, sort    string
	workspace, db        string
	json, human, pretty  bool
	quiet, help, version bool
	timeoutMS            int
	logLevel, traceID    string
}

func claimFlags(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("bd-claim", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.req.Agent, "agent", "", "agent name written as assignee and event actor (default $BD_ACTOR)")
	fs.StringArrayVar(&o.req.Filters.IncludeLabels, "label", nil, "only issues with this label (repeatable: all of them)")
	fs.StringArrayVar(&o.req.Filters.ExcludeLabels, "exclude-label", nil, "skip issues with this label (repeatable: any of them)")
	fs.StringVar(&o.minPriority, "min-priority", "", "only issues at least this urgent: 0-4, P0-P4 or critical|high|medium|low|backlog")
	fs.BoolVar(&o.req.Filters.OnlyUnassigned, "only-unassigned", false, "skip open issues already assigned to this agent")
	fs.StringArrayVar(&o.req.Filters.Types, "type", nil, "only issues of this type (repeatable)")
	fs.StringVar(&o.req.Filters.Parent, "parent", "", "only descendants of this issue (parent-child edges)")
	fs.StringVar(&o.sort, "sort", "priority", "order: priority (P0 first, then oldest), hybrid or oldest (as bd ready)")
	fs.StringVar(&o.req.ID, "id", "", "claim this issue only (compare-and-swap)")
	fs.StringVar(&o.workspace, "workspace", "", "start the search for .beads/ here (default: working directory)")
	fs.StringVar(&o.db, "db", "", "database file (default: discovered as bd does)")
	fs.BoolVar(&o.req.DryRun, "dry-run", false, "report the issue that would be claimed; change nothing")
	fs.BoolVar(&o.json, "json", false, "JSON on stdout (the default)")
	fs.BoolVar(&o.human, "human", false, "readable text instead of JSON")
	fs.BoolVar(&o.pretty, "pretty", false, "indent the JSON")
	fs.IntVar(&o.timeoutMS, "timeout-ms", 5000, "wait this long for another writer's lock before retrying (0: do not wait)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level on stderr: debug|info|warn|error")
	fs.BoolVar(&o.quiet, "quiet", false, "no logs on stderr")
	fs.StringVar(&o.traceID, "trace-id", "", "trace id for the logs (default $TRACE_ID or $OTEL_TRACE_ID)")
	fs.BoolVarP(&o.help, "help", "h", false, "show this help")
	return fs
}

const usageHead = `bd-claim atomically claims one ready issue of a Beads workspace for an agent.

Usage:
  bd-claim --agent NAME [filters] [options]
  bd-claim demo [--agents N] [--issues N] [--keep]
  bd-claim version | --help

`

const usageTail = `
Exit status: 0 claimed (or found, with --dry-run), 1 unexpected error,
2 invalid argument, 3 no issue available, 4 database busy, 5 no workspace or
database, 6 schema or backend not supported, 7 --id claim refused.
`

func usage(w io.Writer) {
	var o options
	fmt.Fprint(w, usageHead+"Flags:\n"+claimFlags(&o).FlagUsagesWrapped(100)+usageTail)
}

func runClaim(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	start := time.Now()
	var o options
	fs := claimFlags(&o)
	err := fs.Parse(args)
	if err != nil {
		err = claim.Errorf(claim.EInvalid, "%v (see bd-claim --help)", err)
	}
	if o.help && err == nil {
		usage(stdout)
		return ExitClaimed
	}
	if o.req.Agent == "" && !fs.Changed("agent") {
		o.req.Agent = getenv("BD_ACTOR")
	}
	out := output{w: stdout, errw: stderr, human: o.human, pretty: o.pretty, agent: o.req.Agent}
	if err == nil {
		err = o.validate(fs)
	}
	if err != nil {
		return out.fail(ExitInvalid, err)
	}
	log := newLogger(stderr, o, getenv)
	filters := slog.Any("filters", o.req.Filters)
	ws, err := claim.FindWorkspace(claim.Locate{DB: o.db, Start: o.workspace, Getenv: getenv})
	log.Debug("workspace_discovery", "cwd", o.workspace, "workspace_root", ws.Root, "db_path", ws.DBPath, "source", ws.Source)
	var issue *claim.Issue
	if err == nil {
		issue, err = claimOnce(ctx, ws, o)
	}
	elapsed := slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)
	switch {
	case err != nil:
		log.Error("issue_claim_error", "agent", o.req.Agent, filters, slog.Group("error", "code", claim.ErrorCode(err), "message", claim.ErrorMessage(err)), elapsed)
		return out.fail(exitCode(err), err)
	case issue == nil:
		log.Info("issue_claim_no_issue", "agent", o.req.Agent, filters, "dry_run", o.req.DryRun, elapsed)
		out.none(o.req)
		return ExitNoIssue
	default:
		log.Info("issue_claim_success", "issue_id", issue.ID, "agent", o.req.Agent, filters, "dry_run", o.req.DryRun, elapsed)
		out.claimed(o.req, issue)
		return ExitClaimed
	}
}

func claimOnce(ctx context.Context, ws claim.Workspace, o options) (*claim.Issue, error) {
	timeout := time.Duration(o.timeoutMS) * time.Millisecond
	if timeout == 0 {
		timeout = -1 // do not wait at all
	}
	store, err := claim.Open(ctx, ws, claim.Options{BusyTimeout: timeout})
	if err != nil {
		return nil, err
	}
	// Closing matters even though the process exits next: the last
	// connection to close checkpoints and resets the WAL. Without it the WAL
	// only grows, and every new process re-reads all of it.
	defer store.Close()
	return store.Claim(ctx, o.req)
}

// validate checks what pflag cannot: values, combinations, the agent name.
func (o *options) validate(fs *pflag.FlagSet) error {
	if fs.NArg() > 0 {
		return claim.Errorf(claim.EInvalid, "unexpected argument %q (see bd-claim --help)", fs.Arg(0))
	}
	if o.json && o.human {
		return claim.Errorf(claim.EInvalid, "--json and --human exclude each other")
	}
	if o.timeoutMS < 0 {
		return claim.Errorf(claim.EInvalid, "--timeout-ms must be 0 or more, not %d", o.timeoutMS)
	}
	if _, ok := logLevels[o.logLevel]; !ok {
		return claim.Errorf(claim.EInvalid, "unknown --log-level %q: use debug, info, warn or error", o.logLevel)
	}
	if o.minPriority != "" {
		p, err := claim.ParsePriority(o.minPriority)
		if err != nil {
			return err
		}
		o.req.Filters.MinPriority = &p
	}
	o.req.Filters.Sort = claim.Sort(o.sort)
	if err := o.req.Filters.Validate(); err != nil {
		return err
	}
	return claim.ValidateAgent(o.req.Agent)
}

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// newLogger writes JSON lines to stderr, or nothing with --quiet.
func newLogger(stderr io.Writer, o options, getenv func(string) string) *slog.Logger {
	if o.quiet {
		return slog.New(slog.DiscardHandler)
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: logLevels[o.logLevel]}))
	for _, id := range []string{o.traceID, getenv("TRACE_ID"), getenv("OTEL_TRACE_ID")} {
		if id != "" {
			return log.With("trace_id", id)
		}
	}
	return log
}

// output renders results as the JSON contract or as text for a person.
type output struct {
	w, errw       io.Writer
	human, pretty bool
	agent         string
}

type envelope struct {
	Status  string         `json:"status"`
	Agent   string         `json:"agent"`
	DryRun  bool           `json:"dry_run,omitempty"`
	Issue   *claim.Issue   `json:"issue"`
	Filters *claim.Filters `json:"filters,omitempty"`
	Error   *errorBody     `json:"error,omitempty"`
}

type errorBody struct {
	Code    claim.Code `json:"code"`
	Message string     `json:"message"`
	Holder  string     `json:"holder,omitempty"`
}

func (o output) claimed(req claim.Request, iss *claim.Issue) {
	if !o.human {
		o.json(envelope{Status: "ok", Agent: req.Agent, DryRun: req.DryRun, Issue: iss, Filters: &req.Filters})
		return
	}
	verb := "claimed"
	if req.DryRun {
		verb = "would claim"
	}
	fmt.Fprintf(o.w, "%s %s for %s: %q (P%d %s", verb, iss.ID, req.Agent, iss.Title, iss.Priority, iss.IssueType)
	if len(iss.Labels) > 0 {
		fmt.Fprintf(o.w, ", labels %s", strings.Join(iss.Labels, ","))
	}
	fmt.Fprintf(o.w, ")\n")
}

func (o output) none(req claim.Request) {
	if !o.human {
		o.json(envelope{Status: "ok", Agent: req.Agent, DryRun: req.DryRun, Filters: &req.Filters})
		return
	}
	fmt.Fprintf(o.w, "no ready issue for %s matches these filters\n", req.Agent)
}

func (o output) fail(code int, err error) int {
	body := &errorBody{Code: claim.ErrorCode(err), Message: claim.ErrorMessage(err)}
	var ce *claim.Error
	if errors.As(err, &ce) {
		body.Holder = ce.Holder
	}
	if o.human {
		fmt.Fprintf(o.errw, "bd-claim: %s: %s\n", body.Code, body.Message)
	} else {
		o.json(envelope{Status: "error", Agent: o.agent, Error: body})
	}
	return code
}

func (o output) json(v envelope) {
	enc := json.NewEncoder(o.w)
	if o.pretty {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v) // stdout write errors have nowhere better to go
}
