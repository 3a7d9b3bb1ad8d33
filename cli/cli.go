// Package cli is bd-claim's command line: flags, output and exit statuses
// around package claim.
package cli

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/dolt"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// Run runs bd-claim with args (without the program name) and returns its
// exit status. It writes results to stdout, logs to stderr, and reads the
// environment only through getenv. Cancelling ctx (a signal) stops a
// waiting claim; a write that has begun completes first.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) > 0 {
		switch c, ok := commands[args[0]]; {
		case args[0] == "demo":
			return runDemo(ctx, args[1:], stdout, stderr)
		case args[0] == "version":
			fmt.Fprintf(stdout, "bd-claim %s\n", version())
			return ExitClaimed
		case args[0] == "help":
			c = commands[""]
			if len(args) > 1 && commands[args[1]] != nil {
				c = commands[args[1]]
			}
			return run(ctx, c, []string{"--help"}, stdout, stderr, getenv)
		case args[0] == "claim":
			args = args[1:]
		case ok:
			return run(ctx, c, args[1:], stdout, stderr, getenv)
		}
	}
	return run(ctx, commands[""], args, stdout, stderr, getenv)
}

// The release build's stamp, set by goreleaser's ldflags (-X; see
// .goreleaser.yaml): the version, the commit and the build's date. Empty in
// any other build.
var stampVersion, stampCommit, stampDate string

// version is this binary's version (buildVersion of its stamp, else of
// its build info) and which build it is (buildName).
func version() string {
	info, _ := debug.ReadBuildInfo()
	return buildVersion(stamp{stampVersion, stampCommit, stampDate}, info) + " (" + buildName(dolt.Embedded) + ")"
}

// buildName names a build as bd-claim version prints it: the embedded one
// handles every workspace, the default one all but bd v1.3's default,
// embedded Dolt.
func buildName(embedded bool) string {
	if embedded {
		return "embedded build"
	}
	return "default build: SQLite and Dolt server/proxied; no embedded Dolt"
}

// stamp is what a release build carries: version, commit and date.
type stamp struct{ version, commit, date string }

// buildVersion is the version of a build, as bd-claim version prints it.
// A release build: its stamp, the version, the first 12 digits of the
// commit, the date. Any other: what Go stamped into the build, the module
// version (v1.2.3 from go install ...@v1.2.3; from go build in a git
// checkout a pseudo-version, or (devel)), then the first 12 digits of the
// VCS revision when stamped, then (modified) when the tree had uncommitted
// changes; "(unknown)" without build info.
func buildVersion(s stamp, info *debug.BuildInfo) string {
	if s.version != "" {
		v := s.version
		if s.commit != "" {
			v += " " + s.commit[:min(12, len(s.commit))]
		}
		if s.date != "" {
			v += " " + s.date
		}
		return v
	}
	if info == nil {
		return "(unknown)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
	}
	if modified == "true" {
		v += " (modified)"
	}
	return v
}

// command is one of bd-claim's commands: its flags beyond the common ones
// and what it does once the store is open.
type command struct {
	name, usage, about string
	event              string // prefix of its log messages
	flags              func(fs *pflag.FlagSet, o *options)
	check              func(o *options) error
	do                 func(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int
	actorDefault       bool // the agent may be omitted: the actor is then "bd-claim"
	protocolOnly       bool // stdout is a protocol's: no --json, --human, --pretty
	// unstarted, when set, handles an error before do could run (a bad
	// flag, no workspace) instead of printing its envelope.
	unstarted func(ctx context.Context, o *options, stdout io.Writer, log *slog.Logger, err error) int
}

var commands = map[string]*command{}

func init() {
	for _, c := range []*command{claimCommand, releaseCommand, closeCommand, heartbeatCommand, resetCommand, reapCommand, statsCommand, mcpCommand} {
		commands[c.name] = c
	}
}

// options are the parsed flags of any command.
type options struct {
	req                 claim.Request
	minPriority, sort   string
	priority, refused   string
	metadataFields      []string
	directory           string
	workspace, db, dsn  string
	json, human, pretty bool
	quiet, help         bool
	timeoutMS           int
	logLevel, traceID   string
	wait, lease         string
	olderThan           string // reap --older-than
	explain, failed     bool
	unique              bool
	reason              string
	settings            map[string]*string // name → flag value, for the settings flags
	overrides           claim.Overrides    // the settings flags given, parsed
	release             claim.ReleaseRequest
	reap                claim.ReapRequest
	heartbeat           claim.HeartbeatRequest
	close               claim.CloseRequest
	reset               claim.ResetRequest
	fs                  *pflag.FlagSet
	cfg                 claim.Settings
	dirLabel            string // the label config directory.labels gives the command's directory (dirLabel), bd ready's scope there where its bd scopes (Store.ScopesByDirectory)
	ws                  claim.Workspace
	start               time.Time
	getenv              func(string) string
}

// elapsed is the duration_ms attribute of a command's last log line.
func (o *options) elapsed() slog.Attr {
	return slog.Float64("duration_ms", float64(time.Since(o.start).Microseconds())/1000)
}

func newFlags(c *command, o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("bd-claim "+c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	o.fs = fs
	fs.StringVar(&o.req.Agent, "agent", "", "agent name written as assignee and event actor (default $BEADS_ACTOR, else $BD_ACTOR)")
	c.flags(fs, o)
	fs.StringVarP(&o.directory, "directory", "C", "", "run as if started in this directory (as bd -C): --workspace and a relative --db start there")
	fs.StringVar(&o.workspace, "workspace", "", "start the search for .beads/ here (default: working directory)")
	fs.StringVar(&o.db, "db", "", "database file (default: discovered as bd does)")
	fs.StringVar(&o.dsn, "dsn", "", "Dolt server database as user:password@tcp(host:port)/database (default $BD_CLAIM_DSN, else as bd finds it)")
	if !c.protocolOnly {
		fs.BoolVar(&o.json, "json", false, "JSON on stdout (the default)")
		fs.BoolVar(&o.human, "human", false, "readable text instead of JSON")
		fs.BoolVar(&o.pretty, "pretty", false, "indent the JSON")
	}
	fs.IntVar(&o.timeoutMS, "timeout-ms", 0, "wait at most this long for the other writers (0: do not wait); default: 5000 per try on SQLite, and on Dolt as long as they take their turns or commit, until 30000 pass with neither")
	levelHelp := "log level on stderr: debug|info|warn|error (with --human: warn unless given)"
	if c.protocolOnly {
		levelHelp, _, _ = strings.Cut(levelHelp, " (")
	}
	fs.StringVar(&o.logLevel, "log-level", "info", levelHelp)
	fs.BoolVar(&o.quiet, "quiet", false, "no logs on stderr")
	fs.StringVar(&o.traceID, "trace-id", "", "trace id for the logs (default $TRACE_ID or $OTEL_TRACE_ID)")
	fs.BoolVarP(&o.help, "help", "h", false, "show this help")
	return fs
}

// settingFlags adds a flag per setting (lease and max-held only where
// they apply); each overrides $BD_CLAIM_* and .beads/config.yaml.
func settingFlags(fs *pflag.FlagSet, o *options, names ...string) {
	o.settings = map[string]*string{}
	for _, h := range claim.SettingsHelp() {
		for _, n := range names {
			if n == h.Name {
				o.settings[n] = fs.String(n, "", fmt.Sprintf("%s (default %s; $%s, %s)", h.Help, h.Default, h.Env, h.Key))
			}
		}
	}
}

var policyNames = []string{"backoff-initial", "backoff-multiplier", "backoff-max", "max-failures", "abandoned-label"}

func claimFlagSet(fs *pflag.FlagSet, o *options) {
	fs.StringArrayVar(&o.req.Filters.IncludeLabels, "label", nil, "only issues with this label (repeatable: all of them; default: config directory.labels for the directory, as bd ready)")
	fs.StringArrayVar(&o.req.Filters.LabelsAny, "label-any", nil, "only issues with at least one of these labels (repeatable)")
	fs.StringArrayVar(&o.req.Filters.ExcludeLabels, "exclude-label", nil, "skip issues with this label (repeatable: any of them)")
	fs.StringVar(&o.req.Filters.LabelPattern, "label-pattern", "", "only issues with a label matching this glob (* and ?; case-sensitive)")
	fs.StringVar(&o.req.Filters.LabelRegex, "label-regex", "", "only issues with a label matching this regular expression (unanchored)")
	fs.StringVar(&o.minPriority, "min-priority", "", "only issues at least this urgent: 0-4, P0-P4 or critical|high|medium|low|backlog")
	fs.StringVar(&o.priority, "priority", "", "only issues of exactly this priority (as --min-priority spells it)")
	fs.BoolVar(&o.req.Filters.OnlyUnassigned, "only-unassigned", false, "skip open issues already assigned to this agent")
	fs.StringArrayVar(&o.req.Filters.Types, "type", nil, "only issues of this type (repeatable)")
	fs.StringArrayVar(&o.req.Filters.ExcludeTypes, "exclude-type", nil, "skip issues of these types too (repeatable or comma-separated; ignored with --type, as bd ready)")
	fs.StringVar(&o.req.Filters.HasMetadataKey, "has-metadata-key", "", "only issues whose metadata has this top-level key")
	fs.StringArrayVar(&o.metadataFields, "metadata-field", nil, "only issues whose metadata key=value (repeatable: all of them)")
	fs.BoolVar(&o.req.Filters.IncludeDeferred, "include-deferred", false, "also issues deferred to the future, and children of deferred parents")
	fs.StringVar(&o.req.Filters.Parent, "parent", "", "only descendants of this issue (parent-child edges)")
	fs.StringVar(&o.sort, "sort", "priority", "order: priority (P0 first, then oldest), hybrid or oldest (as bd ready)")
	fs.StringVar(&o.req.ID, "id", "", "claim this issue only (compare-and-swap)")
	fs.Int64Var(&o.req.ClaimID, "claim-id", 0, "with --id: succeed only while the agent still holds the issue under this claim")
	fs.BoolVar(&o.req.DryRun, "dry-run", false, "report the issue that would be claimed; change nothing")
	fs.BoolVar(&o.req.Resume, "resume", false, "if the agent holds an in_progress issue that passes the filters, return it (the oldest claim) and renew its lease; claim nothing new")
	fs.BoolVar(&o.explain, "explain", false, "with --dry-run: count the open issues each rule excludes")
	fs.BoolVar(&o.req.BdJSON, "bd-json", false, "print the claim as the workspace's bd prints its own (bd ready --claim --json; with --id, bd update ID --claim --json): a list of the issue, or [] and exit 0 when none; errors on stderr")
	fs.StringVar(&o.wait, "wait", "0", "when nothing is claimable, wait up to this long (e.g. 30s, 10m) for an issue")
	settingFlags(fs, o, append([]string{"lease", "max-held"}, policyNames...)...)
	// bd ready --claim refuses these; they are here to say why.
	fs.StringVar(&o.refused, "mol", "", "")
	fs.StringVar(&o.refused, "assignee", "", "")
	_ = fs.MarkHidden("mol")
	_ = fs.MarkHidden("assignee")
}

func claimCheck(o *options) error {
	// An --id given empty (a script's unset variable, the MCP claim tool's
	// "id": "") is a mistake: the library reads ID "" as claim-next.
	if o.fs.Changed("id") && strings.TrimSpace(o.req.ID) == "" {
		return claim.Errorf(claim.EInvalid, "--id is empty: give an issue id, or omit --id to claim the next ready issue")
	}
	switch {
	case o.fs.Changed("mol"):
		return claim.Errorf(claim.EInvalid, "--mol: bd ready --claim refuses it too (bd ready --mol lists a molecule's ready steps; --parent MOLECULE claims among its ready descendants)")
	case o.fs.Changed("assignee"):
		return claim.Errorf(claim.EInvalid, "--assignee: bd ready --claim refuses it too; the claim is for --agent, and --only-unassigned skips assigned issues")
	}
	for _, p := range []struct {
		flag string
		to   **int
	}{{o.minPriority, &o.req.Filters.MinPriority}, {o.priority, &o.req.Filters.Priority}} {
		if p.flag != "" {
			v, err := claim.ParsePriority(p.flag)
			if err != nil {
				return err
			}
			*p.to = &v
		}
	}
	for _, kv := range o.metadataFields {
		k, v, err := claim.ParseMetadataField(kv)
		if err != nil {
			return err
		}
		if o.req.Filters.MetadataFields == nil {
			o.req.Filters.MetadataFields = map[string]string{}
		}
		o.req.Filters.MetadataFields[k] = v // a key given again: the last value, as bd ready
	}
	o.req.Filters.Sort = claim.Sort(o.sort)
	if o.explain && !o.req.DryRun {
		return claim.Errorf(claim.EInvalid, "--explain needs --dry-run")
	}
	if o.req.BdJSON {
		switch {
		case o.human:
			return claim.Errorf(claim.EInvalid, "--bd-json prints bd's JSON: --human does not go with it")
		case o.pretty:
			return claim.Errorf(claim.EInvalid, "--bd-json prints bd's JSON, indented as bd indents it: --pretty does not go with it")
		case o.explain:
			return claim.Errorf(claim.EInvalid, "--explain: bd's JSON has no room for its counts (bd ready --claim refuses --explain too); drop --bd-json to see them")
		}
	}
	var err error
	if o.req.Wait, err = claim.ParseDuration("wait", o.wait, claim.MaxWait); err != nil {
		return err
	}
	// The request as the flags give it; the workspace's settings fill in
	// the lease and the capacity later (see doClaim).
	given := o.overrides.Given()
	o.req.Lease, o.req.MaxHeld = given.Lease, given.MaxHeld
	return o.req.Validate()
}

var claimCommand = &command{
	name:  "",
	event: "issue_claim",
	usage: "bd-claim --agent NAME [filters] [options]",
	about: "Claim the next ready issue (or --id ISSUE) for an agent.",
	flags: claimFlagSet,
	check: claimCheck,
	do:    doClaim,
}

func doClaim(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
	req := o.req
	if !req.DryRun {
		req.Lease = o.cfg.Lease
	}
	req.MaxHeld = o.cfg.MaxHeld
	// Without --label, a claim-next takes what bd ready would list in the
	// agent's directory.
	if o.dirLabel != "" && s.ScopesByDirectory() && req.ID == "" && len(req.Filters.IncludeLabels) == 0 && len(req.Filters.LabelsAny) == 0 {
		req.Filters.IncludeLabels = []string{o.dirLabel}
	}
	filters := slog.Any("filters", req.Filters)
	if req.Wait > 0 {
		log.Debug("issue_claim_waiting", "agent", req.Agent, filters, "wait", req.Wait.String())
	}
	res, err := s.Claim(ctx, req)
	out.envelope = req.BdJSON && o.getenv("BD_JSON_ENVELOPE") == "1" && s.BdJSONEnvelope() // as bd's jsonEnvelopeEnabled
	var explain *claim.Explanation
	if err == nil && o.explain {
		var e claim.Explanation
		e, err = s.Explain(ctx, req)
		explain = &e
	}
	switch {
	case err != nil:
		log.Error("issue_claim_error", "agent", req.Agent, filters, errAttr(err), o.elapsed())
		return out.fail(exitCode(err), err)
	case res.Issue == nil:
		log.Info("issue_claim_no_issue", "agent", req.Agent, filters, "dry_run", req.DryRun, "reason", res.Reason, o.elapsed())
		out.claimed(req, res, explain)
		if req.BdJSON {
			return ExitClaimed // bd prints [] and exits 0
		}
		return ExitNoIssue
	default:
		attrs := []any{"issue_id", res.Issue.ID, "agent", req.Agent, filters, "dry_run", req.DryRun, "claim_id", res.ClaimID}
		if res.TookOver != nil {
			attrs = append(attrs, "took_over_from", res.TookOver.Agent, "took_over_claim_id", res.TookOver.ClaimID)
		}
		if res.Resumed {
			attrs = append(attrs, "resumed", true)
		}
		log.Info(done("issue_claim", req.DryRun), append(attrs, o.elapsed())...)
		out.claimed(req, res, explain)
		return ExitClaimed
	}
}

const usageTail = `
Settings come from the flags, then the environment ($BD_CLAIM_*), then the
workspace's .beads/config.yaml (keys under claim:). See README.md.

Exit status: 0 done (claimed, or found with --dry-run), 1 unexpected error,
2 invalid argument, 3 no issue available, 4 database busy, 5 no workspace or
database, 6 schema or backend not supported, 7 refused (--id, release,
close, heartbeat: held by another, not claimable, no such issue), 130 interrupted.
`

const commandList = `Commands:
  bd-claim [claim] --agent NAME [filters]   claim the next ready issue, or --id ISSUE
  bd-claim release --agent NAME --id ISSUE   give an issue back (--failed: a failed attempt)
  bd-claim close --agent NAME --id ISSUE     close a held issue whose work is done, as bd close
  bd-claim heartbeat --agent NAME --id ISSUE renew the lease of a claim
  bd-claim reset --id ISSUE                  clear an issue's failed attempts and abandonment
  bd-claim reap [--dry-run]                  return every claim whose lease expired to open
  bd-claim stats                             ready, blocked, held, expired, backoff, abandoned
  bd-claim mcp --agent NAME                  serve these commands as MCP tools over stdio
  bd-claim demo [--agents N] [--issues N]    drain a generated workspace with racing agents
  bd-claim version | help COMMAND | COMMAND --help
`

func usage(w io.Writer, c *command) {
	var o options
	head := "bd-claim atomically claims one ready issue of a Beads workspace for an agent.\n\n" + commandList
	if c.name != "" {
		head = c.about + "\n"
	}
	fmt.Fprintf(w, "%s\nUsage:\n  %s\n\nFlags:\n%s%s", head, c.usage, newFlags(c, &o).FlagUsagesWrapped(100), usageTail)
}

func run(ctx context.Context, c *command, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	o := &options{start: time.Now()}
	fs := newFlags(c, o)
	err := fs.Parse(args)
	if word := commandWord(c, args); word != nil {
		err = word
	} else if err != nil {
		err = parseError(helpRef(c), fs, err)
	}
	if o.help && err == nil {
		usage(stdout, c)
		return ExitClaimed
	}
	if o.req.Agent == "" && !fs.Changed("agent") {
		o.req.Agent = envActor(getenv)
		if o.req.Agent == "" && c.actorDefault {
			o.req.Agent = "bd-claim"
		}
	}
	out := output{w: stdout, errw: stderr, human: o.human, pretty: o.pretty, agent: o.req.Agent, bd: o.req.BdJSON}
	if err != nil {
		out.bd = bdJSONAsked(args) // what pflag did not get to
	}
	if err == nil {
		err = o.validate(c)
	}
	log := newLogger(stderr, *o, getenv)
	if err != nil && c.unstarted != nil {
		log.Error(c.event+"_error", "agent", o.req.Agent, errAttr(err), o.elapsed())
		return c.unstarted(ctx, o, stdout, log, err)
	}
	if err != nil {
		return out.fail(ExitInvalid, err)
	}
	o.getenv = getenv
	o.ws, err = locate(o)
	log.Debug("workspace_discovery", "cwd", o.workspace, "workspace_root", o.ws.Root, "db_path", o.ws.DBPath, "source", o.ws.Source)
	if err == nil {
		o.cfg, err = claim.LoadSettings(o.ws, getenv, &o.overrides)
		o.dirLabel = dirLabel(o.cfg, o.workspace)
	}
	var store *claim.Store
	if err == nil {
		store, err = openStore(ctx, o)
	}
	if err != nil {
		log.Error(c.event+"_error", "agent", o.req.Agent, errAttr(err), o.elapsed())
		if c.unstarted != nil {
			return c.unstarted(ctx, o, stdout, log, err)
		}
		return out.fail(exitCode(err), err)
	}
	// Closing matters even though the process exits next: the last
	// connection to close checkpoints and resets the WAL. Without it the WAL
	// only grows, and every new process re-reads it.
	defer store.Close()
	return c.do(ctx, store, o, out, log)
}

// bdJSONAsked says whether args ask for --bd-json, for a command line
// that does not parse: its error goes to stderr then too, so that a
// script that reads bd's JSON on stdout finds none.
func bdJSONAsked(args []string) (asked bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--bd-json"); ok && (v == "" || v[0] == '=') {
			b, err := strconv.ParseBool(strings.TrimPrefix(v, "="))
			asked = b || err != nil // --bd-json alone, or a value pflag refuses
		}
	}
	return asked
}

// envActor is the actor that bd v1.3 takes from the environment when no
// --actor is given: $BEADS_ACTOR, else the deprecated $BD_ACTOR. An empty
// variable counts as unset, as in bd; a blank one does not, and is refused
// as a name. Unlike bd, there is no fallback to git's user.name or $USER: an
// agent without a name is refused.
func envActor(getenv func(string) string) string {
	if a := getenv("BEADS_ACTOR"); a != "" {
		return a
	}
	return getenv("BD_ACTOR")
}

// locate finds the command's workspace as bd finds it (FindWorkspace).
func locate(o *options) (claim.Workspace, error) {
	return workspace.Find(workspace.Locate{DB: o.db, DSN: o.dsn, Start: o.workspace, Getenv: o.getenv})
}

// openStore opens the workspace found (o.ws) with the command's busy
// timeout (without --timeout-ms, the engine's default) and failure policy.
func openStore(ctx context.Context, o *options) (*claim.Store, error) {
	var timeout time.Duration
	if o.fs.Changed("timeout-ms") {
		timeout = time.Duration(o.timeoutMS) * time.Millisecond
		if timeout == 0 {
			timeout = -1 // do not wait at all
		}
	}
	return engines.Open(ctx, o.ws, claim.Options{BusyTimeout: timeout, Policy: &o.cfg.Policy})
}

// dirLabel is the label that bd ready scopes its list to in the command's
// directory (--workspace, else the working directory, which is looked up
// only when config directory.labels has any; a failed lookup scopes
// nothing), "" for none. It is resolved once per process: an MCP server's
// claims all use its own.
func dirLabel(cfg claim.Settings, workspace string) string {
	if len(cfg.DirectoryLabels) == 0 {
		return ""
	}
	dir, _ := filepath.Abs(workspace)
	return cfg.DirectoryLabel(dir)
}

// validate checks what pflag cannot: values and combinations of the flags,
// then the command's request (c.check, which calls the library's Validate).
func (o *options) validate(c *command) error {
	fs := o.fs
	if fs.NArg() > 0 {
		return strayArgument(c, fs.Arg(0))
	}
	if err := checkLengths(fs); err != nil {
		return err
	}
	if o.directory != "" {
		for _, p := range []*string{&o.workspace, &o.db} {
			if (*p != "" || p == &o.workspace) && !filepath.IsAbs(*p) {
				*p = filepath.Join(o.directory, *p)
			}
		}
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
	// Settings flags are parsed once, here, before any database is opened;
	// LoadSettings applies them over the workspace's settings.
	for _, h := range claim.SettingsHelp() {
		if v, ok := o.settings[h.Name]; ok && fs.Changed(h.Name) {
			if err := o.overrides.Set(h.Name, *v, "--"+h.Name); err != nil {
				return err
			}
		}
	}
	return c.check(o)
}

// uncapped are the flags whose values may be longer than
// claim.MaxValueLen: paths, the DSN, metadata values (their keys are
// capped by the library), and the reason (capped at
// claim.MaxReasonLen by the library).
var uncapped = map[string]bool{"workspace": true, "db": true, "directory": true, "dsn": true, "reason": true, "metadata-field": true}

// checkLengths refuses a flag's value longer than claim.MaxValueLen, as
// bd's columns would, before any is echoed in an error.
func checkLengths(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || uncapped[f.Name] {
			return
		}
		values := []string{f.Value.String()}
		if list, ok := f.Value.(pflag.SliceValue); ok {
			values = list.GetSlice()
		}
		for _, v := range values {
			if n := utf8.RuneCountInString(v); n > claim.MaxValueLen {
				err = claim.Errorf(claim.EInvalid, "--%s is %d characters long; the limit is %d", f.Name, n, claim.MaxValueLen)
			}
		}
	})
	return err
}

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// newLogger writes JSON lines to stderr, or nothing with --quiet. With
// --human it writes one line of text per record for a person instead
// (bd-claim: level=warn msg=... key=value), from warn up unless --log-level
// says otherwise.
func newLogger(stderr io.Writer, o options, getenv func(string) string) *slog.Logger {
	if o.quiet {
		return slog.New(slog.DiscardHandler)
	}
	var h slog.Handler = slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: logLevels[o.logLevel]})
	if o.human {
		h = humanHandler(stderr, o.fs.Changed("log-level"), logLevels[o.logLevel])
	}
	log := slog.New(h)
	for _, id := range []string{o.traceID, getenv("TRACE_ID"), getenv("OTEL_TRACE_ID")} {
		if id != "" {
			return log.With("trace_id", id)
		}
	}
	return log
}

// humanHandler is the --human logger: slog's text format without the time,
// the level in lower case, structured values (the filters) as compact
// JSON, each line prefixed with "bd-claim: ". Without an explicit
// --log-level only warnings get through: a command's error is already the
// "bd-claim: CODE: message" line, so its error record is not printed twice.
func humanHandler(stderr io.Writer, explicit bool, level slog.Level) slog.Handler {
	if !explicit {
		level = slog.LevelWarn
	}
	h := slog.NewTextHandler(prefixed{stderr}, &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		switch v := a.Value; {
		case len(groups) == 0 && a.Key == slog.TimeKey:
			return slog.Attr{}
		case len(groups) == 0 && a.Key == slog.LevelKey:
			return slog.String(a.Key, strings.ToLower(v.String()))
		case v.Kind() == slog.KindAny:
			switch v.Any().(type) {
			case encoding.TextMarshaler, error:
			default:
				if b, err := json.Marshal(v.Any()); err == nil && b[0] != '"' { // a named string prints as itself
					return slog.String(a.Key, string(b))
				}
			}
		}
		return a
	}})
	if explicit {
		return h
	}
	return belowError{h}
}

// prefixed starts each log line with "bd-claim: " (slog writes a record in
// one Write).
type prefixed struct{ w io.Writer }

func (p prefixed) Write(b []byte) (int, error) {
	_, err := p.w.Write(append([]byte("bd-claim: "), b...))
	return len(b), err
}

// belowError drops error records, which the human output reports already.
// (bd-claim never calls WithGroup; the embedded handler's would drop the
// filter.)
type belowError struct{ slog.Handler }

func (h belowError) Enabled(ctx context.Context, l slog.Level) bool {
	return l < slog.LevelError && h.Handler.Enabled(ctx, l)
}
func (h belowError) WithAttrs(as []slog.Attr) slog.Handler {
	return belowError{h.Handler.WithAttrs(as)}
}

func errAttr(err error) slog.Attr {
	return slog.Group("error", "code", claim.ErrorCode(err), "message", claim.ErrorMessage(err))
}

// output renders results as the JSON contract or as text for a person, or
// a claim as the workspace's bd prints its own (bd: --bd-json, whose
// errors go to stderr).
type output struct {
	w, errw       io.Writer
	human, pretty bool
	bd, envelope  bool // envelope: bd's JSON in bd's envelope (BD_JSON_ENVELOPE=1)
	agent         string
}

// envelope is the JSON contract of claim, release, close, heartbeat and reset.
type envelope struct {
	Status         string             `json:"status"`
	Agent          string             `json:"agent"`
	DryRun         bool               `json:"dry_run,omitempty"`
	Issue          *claim.Issue       `json:"issue"`
	ClaimID        int64              `json:"claim_id,omitempty"`
	LeaseExpiresAt *time.Time         `json:"lease_expires_at,omitempty"`
	TookOver       *claim.Holder      `json:"took_over,omitempty"`
	Resumed        bool               `json:"resumed,omitempty"`
	Reason         string             `json:"reason,omitempty"`
	Attempt        *attempt           `json:"attempt,omitempty"`
	Reset          *reset             `json:"reset,omitempty"`
	AlreadyClosed  bool               `json:"already_closed,omitempty"`
	Explain        *claim.Explanation `json:"explain,omitempty"`
	Filters        *claim.Filters     `json:"filters,omitempty"`
	Error          *errorBody         `json:"error,omitempty"`
}

type errorBody struct {
	Code          claim.Code `json:"code"`
	Message       string     `json:"message"`
	Holder        string     `json:"holder,omitempty"`
	HolderClaimID int64      `json:"holder_claim_id,omitempty"`
}

func leaseUntil(l *claim.Lease) *time.Time {
	if l == nil {
		return nil
	}
	return &l.Until
}

func (o output) claimed(req claim.Request, res claim.Result, explain *claim.Explanation) {
	if o.bd {
		// bd's json.Encoder, indented by two spaces: [] when nothing was
		// claimed; in the envelope, a map, whose keys encoding/json sorts.
		list := []json.RawMessage{}
		if res.BdJSON != nil {
			list = append(list, res.BdJSON)
		}
		var v any = list
		if o.envelope {
			v = map[string]any{"data": list, "schema_version": 1}
		}
		enc := json.NewEncoder(o.w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v) // stdout write errors have nowhere better to go
		return
	}
	if !o.human {
		o.json(envelope{Status: "ok", Agent: req.Agent, DryRun: req.DryRun, Issue: res.Issue, ClaimID: res.ClaimID,
			LeaseExpiresAt: leaseUntil(res.Lease), TookOver: res.TookOver, Resumed: res.Resumed, Reason: res.Reason, Explain: explain, Filters: &req.Filters})
		return
	}
	if iss := res.Issue; iss == nil {
		fmt.Fprintf(o.w, "no ready issue for %s matches these filters", req.Agent)
		if res.Reason != claim.NoReadyIssue {
			fmt.Fprintf(o.w, ": %s", res.Reason)
		}
		fmt.Fprintln(o.w)
	} else {
		verb := "claimed"
		switch {
		case res.Resumed && req.DryRun:
			verb = "would resume"
		case res.Resumed:
			verb = "resumed"
		case req.DryRun:
			verb = "would claim"
		}
		fmt.Fprintf(o.w, "%s %s for %s: %q (P%d %s", verb, iss.ID, req.Agent, iss.Title, iss.Priority, iss.IssueType)
		if len(iss.Labels) > 0 {
			fmt.Fprintf(o.w, ", labels %s", strings.Join(iss.Labels, ","))
		}
		fmt.Fprintf(o.w, ")")
		if res.ClaimID != 0 {
			fmt.Fprintf(o.w, ", claim %d", res.ClaimID)
		}
		if res.Lease != nil {
			fmt.Fprintf(o.w, ", leased until %s", res.Lease.Until.Format(time.RFC3339))
		}
		if h := res.TookOver; h != nil {
			fmt.Fprintf(o.w, ", taking over from %s (claim %d, lease expired)", h.Agent, h.ClaimID)
		}
		fmt.Fprintln(o.w)
	}
	if explain != nil {
		o.explain(*explain)
	}
}

func (o output) explain(e claim.Explanation) {
	fmt.Fprintf(o.w, "open issues: %d, expired leases: %d, claimable: %d, held by the agent: %d", e.Open, e.Expired, e.Claimable, e.Held)
	if e.MaxHeld > 0 {
		fmt.Fprintf(o.w, " (max %d)", e.MaxHeld)
	}
	fmt.Fprintln(o.w, "\nopen issues excluded, by rule:")
	for _, k := range sortedKeys(e.Excluded) {
		fmt.Fprintf(o.w, "  %-24s %d\n", k, e.Excluded[k])
	}
}

func (o output) fail(code int, err error) int {
	body := &errorBody{Code: claim.ErrorCode(err), Message: claim.ErrorMessage(err)}
	var ce *claim.Error
	if errors.As(err, &ce) {
		body.Holder, body.HolderClaimID = ce.Holder, ce.HolderClaimID
	}
	if o.bd { // stdout carries bd's JSON only: the error is JSON on stderr
		o.w, o.human = o.errw, false
	}
	if o.human {
		fmt.Fprintf(o.errw, "bd-claim: %s: %s\n", body.Code, body.Message)
	} else {
		o.json(envelope{Status: "error", Agent: o.agent, Error: body})
	}
	return code
}

func (o output) json(v any) {
	enc := json.NewEncoder(o.w)
	if o.pretty {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(v) // stdout write errors have nowhere better to go
}

// plural counts for a person: plural(1, "agent", "agents") is "1 agent",
// plural(2, ...) "2 agents".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
