package cli

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"

	"github.com/bdclaim/bd-claim/claim"
)

// bd-claim mcp serves the claim lifecycle as MCP tools over stdio, for one
// agent. A tool call is the CLI command of the same name run in-process on
// the server's one Store: its arguments become that command's flags, so
// they are parsed and validated by the same code (claimCheck,
// Request.Validate...), and its result is the envelope the command prints.

var mcpCommand = &command{
	name:  "mcp",
	event: "mcp",
	usage: "bd-claim mcp --agent NAME [--unique] [--workspace DIR | --db PATH] [settings]",
	about: "Serve the claim lifecycle (claim, release, close, heartbeat, reset, reap, stats) as MCP tools over\n" +
		"stdio for one agent. Claims with a lease are renewed by the server while it runs; when it\n" +
		"exits, their leases lapse (nothing is released). stdout carries only the protocol: a server\n" +
		"that cannot start (no workspace, a bad flag, a workspace this build cannot open) still serves,\n" +
		"and every tool call returns the error; a database that is busy or whose Dolt server is down\n" +
		"is no such error: its calls say so until it is back.\n" +
		"Two live servers of one agent name in one workspace are refused: give each session its own\n" +
		"name, or pass --unique.",
	protocolOnly: true,
	flags: func(fs *pflag.FlagSet, o *options) {
		fs.BoolVar(&o.unique, "unique", false, "append a random suffix to the agent name (backend → backend-1f2e3d4c): each session started from one configuration gets its own name")
		settingFlags(fs, o, append([]string{"lease", "max-held"}, policyNames...)...)
	},
	check: func(o *options) error {
		if err := agentCheck(o); err != nil || !o.unique {
			return err
		}
		suffix := make([]byte, 4)
		_, _ = crand.Read(suffix) // it never fails
		o.req.Agent += fmt.Sprintf("-%x", suffix)
		return agentCheck(o)
	},
	do:        serveMCP,
	unstarted: serveMCPError,
}

// The arguments of each tool. json names the argument, flag the command's
// flag it stands for; a description comes from the flag's help unless a
// jsonschema tag gives one. Every argument is optional in the schema but
// id where the command requires --id; what is required or allowed is
// decided by the command's validation.
type (
	claimArgs struct {
		ID              string      `json:"id,omitempty" flag:"id" jsonschema:"claim this issue only (compare-and-swap); omit to claim the next ready issue"`
		ClaimID         claimIDArg  `json:"claim_id,omitempty" flag:"claim-id" jsonschema:"with id: succeed only while you still hold the issue under this claim_id (the integer claim returned, or its digits as a string)"`
		Labels          []string    `json:"labels,omitempty" flag:"label" jsonschema:"only issues with all of these labels"`
		LabelsAny       []string    `json:"labels_any,omitempty" flag:"label-any" jsonschema:"only issues with at least one of these labels"`
		ExcludeLabels   []string    `json:"exclude_labels,omitempty" flag:"exclude-label" jsonschema:"skip issues with any of these labels"`
		LabelPattern    string      `json:"label_pattern,omitempty" flag:"label-pattern"`
		LabelRegex      string      `json:"label_regex,omitempty" flag:"label-regex"`
		MinPriority     priorityArg `json:"min_priority,omitempty" flag:"min-priority" jsonschema:"only issues at least this urgent: 0 (critical) to 4 (backlog); \"P1\" or \"high\" are accepted too"`
		Priority        priorityArg `json:"priority,omitempty" flag:"priority" jsonschema:"only issues of exactly this priority: 0 (critical) to 4 (backlog); \"P1\" or \"high\" are accepted too"`
		Types           []string    `json:"types,omitempty" flag:"type" jsonschema:"only issues of one of these types (bug, task, feature, chore... any case; bd's aliases such as mr and feat too); a type that is neither built in nor one of the workspace's custom types is refused"`
		ExcludeTypes    []string    `json:"exclude_types,omitempty" flag:"exclude-type" jsonschema:"skip issues of these types too (ignored with types); known types only, as for types"`
		HasMetadataKey  string      `json:"has_metadata_key,omitempty" flag:"has-metadata-key"`
		MetadataFields  []string    `json:"metadata_fields,omitempty" flag:"metadata-field" jsonschema:"only issues whose metadata matches each key=value"`
		IncludeDeferred bool        `json:"include_deferred,omitempty" flag:"include-deferred"`
		Parent          string      `json:"parent,omitempty" flag:"parent"`
		Sort            string      `json:"sort,omitempty" flag:"sort"`
		OnlyUnassigned  bool        `json:"only_unassigned,omitempty" flag:"only-unassigned"`
		DryRun          bool        `json:"dry_run,omitempty" flag:"dry-run"`
		Explain         bool        `json:"explain,omitempty" flag:"explain"`
		Resume          bool        `json:"resume,omitempty" flag:"resume" jsonschema:"if you hold an in_progress issue that passes the filters, return it (the oldest claim, resumed: true) with its lease renewed, and claim nothing new; after a restart, ask with resume before taking more work"`
		Lease           string      `json:"lease,omitempty" flag:"lease" jsonschema:"lease of the claim as a Go duration (10m); the server renews it while it runs. Default: the lease setting"`
		MaxHeld         int         `json:"max_held,omitempty" flag:"max-held" jsonschema:"claim nothing new while you hold this many in_progress issues; 0 = no limit. Default: the max-held setting"`
		Wait            string      `json:"wait,omitempty" flag:"wait" jsonschema:"when nothing is claimable, wait up to this long (a Go duration: 50s) for an issue; the server sends progress while waiting when the call has a progressToken. Keep it under your client's request timeout (often 60s) and call again to wait longer"`
	}
	releaseArgs struct {
		ID      string     `json:"id" flag:"id"`
		ClaimID claimIDArg `json:"claim_id,omitempty" flag:"claim-id" jsonschema:"act only while you still hold the issue under this claim_id (the integer claim returned, or its digits as a string)"`
		Reason  string     `json:"reason,omitempty" flag:"reason"`
		Failed  bool       `json:"failed,omitempty" flag:"failed"`
	}
	closeArgs struct {
		ID      string     `json:"id" flag:"id"`
		ClaimID claimIDArg `json:"claim_id,omitempty" flag:"claim-id" jsonschema:"act only while you still hold the issue under this claim_id (the integer claim returned, or its digits as a string)"`
		Reason  string     `json:"reason,omitempty" flag:"reason"`
		DryRun  bool       `json:"dry_run,omitempty" flag:"dry-run"`
	}
	heartbeatArgs struct {
		ID      string     `json:"id" flag:"id"`
		ClaimID claimIDArg `json:"claim_id,omitempty" flag:"claim-id" jsonschema:"act only while you still hold the issue under this claim_id (the integer claim returned, or its digits as a string)"`
		Lease   string     `json:"lease,omitempty" flag:"lease" jsonschema:"the new lease from now, as a Go duration (10m); default: the claim's lease length"`
	}
	resetArgs struct {
		ID string `json:"id" flag:"id"`
	}
	reapArgs struct {
		OlderThan string `json:"older_than,omitempty" flag:"older-than" jsonschema:"reap past this grace window instead, as a Go duration (10m; 0s: at once): leases that ended at least this long ago (bd's own included), claims without a lease made at least this long ago"`
		DryRun    bool   `json:"dry_run,omitempty" flag:"dry-run"`
	}
	statsArgs struct{}
)

// priorityArg is min_priority: an integer, as agents and Beads' own MCP
// server give priorities, or a string as on the command line ("P1",
// "high").
type priorityArg string

func (p *priorityArg) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err == nil { // a number, or a string that reads as one
		*p = priorityArg(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return claim.Errorf(claim.EInvalid, "arguments min_priority and priority must be an integer from 0 to 4 or a string such as \"P1\" or \"high\", not %s", jsonKind(b))
	}
	*p = priorityArg(s)
	return nil
}

// claimIDArg is a claim_id: the integer a claim returned, or its digits
// as a string, as a client that keeps ids as text sends it back. The
// command's --claim-id parses and checks it.
type claimIDArg string

func (c *claimIDArg) UnmarshalJSON(b []byte) error {
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil { // a number, or a string that reads as one
		return claim.Errorf(claim.EInvalid, "argument claim_id must be the integer a claim returned (or its digits as a string), not %s", jsonKind(b))
	}
	*c = claimIDArg(n)
	return nil
}

// jsonKind names the JSON type of a value as the errors say it.
func jsonKind(b []byte) string {
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "the string " + string(b)
	default:
		return "boolean"
	}
}

// The results of the tools, for their output schemas: every tool returns
// the envelope its command prints, ok or error (the error envelope's issue
// is null).
type (
	reapResult struct {
		Status string          `json:"status"`
		Agent  string          `json:"agent"`
		DryRun bool            `json:"dry_run,omitempty"`
		Reaped []claim.Expired `json:"reaped,omitempty"`
		Issue  *claim.Issue    `json:"issue,omitempty"`
		Error  *errorBody      `json:"error,omitempty"`
	}
	statsResult struct {
		Status string `json:"status"`
		claim.Stats
		Agent string       `json:"agent,omitempty"`
		Issue *claim.Issue `json:"issue,omitempty"`
		Error *errorBody   `json:"error,omitempty"`
	}
)

// mcpTool is one tool: the command it runs, the types of its arguments and
// its result, and its hints. No tool reaches outside the workspace: none
// is open-world.
type mcpTool struct {
	name, title, description string
	command                  *command
	args, result             reflect.Type
	readOnly                 bool
	destructive              bool                           // may end what another agent relies on
	idempotent               bool                           // a repeat with the same arguments changes nothing more
	after                    func(m *mcpServer, env called) // runs after a call that succeeded, not after a dry run
}

var (
	envelopeType = reflect.TypeFor[envelope]()
	mcpTools     = []*mcpTool{
		{name: "claim", title: "Claim an issue", command: claimCommand, args: reflect.TypeFor[claimArgs](), result: envelopeType, after: (*mcpServer).claimed,
			description: "Take work: atomically claim the next ready issue (or the one named by id) for you. " +
				"On success the issue is yours, already in_progress and assigned to you: work on it, keep claim_id, " +
				"and when done close it with the close tool. issue null (with reason) means nothing is claimable now: " +
				"retry later or pass wait (under 60s; call again to wait longer). With a lease (argument or setting) the server keeps renewing it while it runs. " +
				"dry_run looks without taking; dry_run with explain counts what each rule excludes. " +
				"resume returns the issue you already hold (resumed: true) instead of claiming another. " +
				"Errors: ALREADY_CLAIMED (error.holder has it), NOT_CLAIMABLE (the message says why), ISSUE_NOT_FOUND, SQLITE_BUSY or BUSY (retry)."},
		// A repeat finds the issue held by no one: refused, unless you claimed it again meanwhile (claim_id fences that).
		{name: "release", title: "Release an issue", command: releaseCommand, args: reflect.TypeFor[releaseArgs](), result: envelopeType, after: (*mcpServer).released,
			description: "Give back an issue you hold and cannot finish: it returns to open, unassigned, for another agent. " +
				"Give a reason; set failed when the attempt failed (the issue then waits out a backoff and is abandoned " +
				"after too many failures). Do not use it for finished work: close that with the close tool."},
		{name: "close", title: "Close a finished issue", command: closeCommand, args: reflect.TypeFor[closeArgs](), result: envelopeType, after: (*mcpServer).released, idempotent: true,
			description: "Finish an issue you hold: close it, with a reason, as `bd close ID --reason` does; the issues it blocked " +
				"become ready. Only you, holding it (under claim_id when given), can close it: after your lease expired and " +
				"another agent took it over, close is refused (ALREADY_CLAIMED) and their claim is untouched. Closing an " +
				"issue you closed already succeeds without a change (already_closed). dry_run checks without closing. " +
				"Errors: ALREADY_CLAIMED, NOT_CLAIMABLE (not held by you, or bd refuses to close it: blocked, open children), ISSUE_NOT_FOUND."},
		{name: "heartbeat", title: "Renew a lease", command: heartbeatCommand, args: reflect.TypeFor[heartbeatArgs](), result: envelopeType, idempotent: true,
			description: "Renew the lease of an issue you hold, from now. The server already renews the claims it made; " +
				"use this to change a lease's length or to renew a claim made elsewhere."},
		{name: "reset", title: "Reset an issue's failed attempts", command: resetCommand, args: reflect.TypeFor[resetArgs](), result: envelopeType, idempotent: true,
			description: "Clear an issue's failed attempts and remove its abandoned label, so that claim hands it out again."},
		{name: "reap", title: "Reap expired claims", command: reapCommand, args: reflect.TypeFor[reapArgs](), result: reflect.TypeFor[reapResult](), destructive: true, idempotent: true,
			description: "Return stale claims to open (any agent's): those whose holder asked for a lease that has expired; with older_than, " +
				"a grace window instead: every claim whose lease ended (or, without a lease, that was made) at least that long ago, as bd reclaim does. " +
				"dry_run lists them without changing anything."},
		{name: "stats", title: "Workspace claim statistics", command: statsCommand, args: reflect.TypeFor[statsArgs](), result: reflect.TypeFor[statsResult](), readOnly: true, idempotent: true,
			description: "Show the workspace's claim state: ready issues by priority, blocked, who holds what and since when, " +
				"expired leases, issues in backoff or abandoned, and the last hour's claims and releases."},
	}
)

// tool is t as the server lists it: its input schema is inferred from its
// arguments, each described by its flag's help unless it has its own, a
// list as a plain array (a client may not act on a list of types); its
// output schema from its result.
func (t *mcpTool) tool() *mcp.Tool {
	// The argument types are fixed: ForType fails only on a Go type it
	// cannot describe, and AddTool refuses the nil schema at once.
	schema, _ := jsonschema.ForType(t.args, nil)
	fs := newFlags(t.command, &options{})
	for i := range t.args.NumField() {
		f := t.args.Field(i)
		p := schema.Properties[argName(f)]
		if p.Description == "" {
			p.Description = t.argNames(fs.Lookup(f.Tag.Get("flag")).Usage)
		}
		switch f.Type.Kind() {
		case reflect.Slice:
			p.Type, p.Types = "array", nil
		case reflect.String:
			switch f.Type {
			case reflect.TypeFor[priorityArg]():
				p.Type = "integer"
				p.Minimum, p.Maximum = new(0.0), new(4.0)
			case reflect.TypeFor[claimIDArg]():
				p.Type = "integer"
				p.Minimum = new(1.0)
			}
		}
	}
	no := false
	return &mcp.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: schema, OutputSchema: resultSchema(t.result),
		Annotations: &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: t.readOnly, DestructiveHint: &t.destructive, IdempotentHint: t.idempotent, OpenWorldHint: &no}}
}

// resultSchema is the output schema of a tool whose result is of type
// typ: its fields as the command prints them, and the error envelope's
// (status "error", error, issue null); only status is always there.
func resultSchema(typ reflect.Type) *jsonschema.Schema {
	s, _ := jsonschema.ForType(typ, nil) // fixed types, as above
	s.Required = []string{"status"}
	s.Properties["status"].Enum = []any{"ok", "error"}
	return s
}

func argName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// argNames rewrites a message of the command (a flag's help, an error) in
// the tool's terms: each flag (--id, and --id ISSUE) becomes the argument
// that stands for it (id). The longer flags go first, so that --label
// does not rewrite the start of --label-any.
func (t *mcpTool) argNames(msg string) string {
	fields := make([]reflect.StructField, t.args.NumField())
	for i := range fields {
		fields[i] = t.args.Field(i)
	}
	slices.SortStableFunc(fields, func(a, b reflect.StructField) int { return len(b.Tag.Get("flag")) - len(a.Tag.Get("flag")) })
	for _, f := range fields {
		flag := "--" + f.Tag.Get("flag")
		msg = strings.ReplaceAll(strings.ReplaceAll(msg, flag+" ISSUE", argName(f)), flag, argName(f))
	}
	return msg
}

var kindNames = map[reflect.Kind]string{reflect.String: "a string", reflect.Int: "an integer", reflect.Int64: "an integer",
	reflect.Bool: "a boolean", reflect.Slice: "an array of strings"}

// flags turns a call's raw arguments into the command's flags. The
// arguments are decoded strictly into the tool's type (no unknown field, no
// wrong type, no null); each argument present becomes --flag=value (a
// list, one per element), so that the command parses and validates it as
// on the command line.
func (t *mcpTool) flags(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil {
		return nil, claim.Errorf(claim.EInvalid, "the arguments must be a JSON object (see the tool's input schema)")
	}
	v := reflect.New(t.args)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		var ce *claim.Error
		switch {
		case errors.As(err, &te):
			return nil, claim.Errorf(claim.EInvalid, "argument %s must be %s, not %s", te.Field, kindNames[te.Type.Kind()], te.Value)
		case errors.As(err, &ce):
			return nil, ce
		}
		return nil, claim.Errorf(claim.EInvalid, "%s (see the tool's input schema)", strings.TrimPrefix(err.Error(), "json: "))
	}
	var args []string
	for i := range t.args.NumField() {
		f := t.args.Field(i)
		raw, ok := given[argName(f)]
		if !ok {
			continue
		}
		if string(raw) == "null" {
			return nil, claim.Errorf(claim.EInvalid, "argument %s is null: give %s, or leave it out", argName(f), kindNames[f.Type.Kind()])
		}
		flag, value := "--"+f.Tag.Get("flag")+"=", v.Elem().Field(i)
		if value.Kind() != reflect.Slice {
			args = append(args, flag+fmt.Sprint(value.Interface()))
			continue
		}
		for j := range value.Len() {
			args = append(args, flag+value.Index(j).String())
		}
	}
	return args, nil
}

// mcpServer is the state of bd-claim mcp: its one Store and agent, the
// settings it was started with, and the renewals of its leased claims. A
// server that could not start has no store: failed says why, and every
// call returns it. One whose database was busy or unreachable at startup
// has no store yet: open opens it at the next call, until it succeeds.
type mcpServer struct {
	ctx      context.Context // ends when the server stops
	eof      context.Context // ends when stdin ends: a wait in progress stops
	store    *claim.Store
	open     func(context.Context) (*claim.Store, error)
	opening  sync.Mutex // held while store is looked at or opened (storeNow)
	failed   error
	agent    string
	ws       claim.Workspace
	dirLabel string // the scope of its claims without --label: the server's directory's (cli.dirLabel)
	cfg      claim.Settings
	log      *slog.Logger
	mu       sync.Mutex
	renewing map[string]*renewal // issue id → its renewal
	wg       sync.WaitGroup
}

type renewal struct{ stop context.CancelFunc }

// progressEvery is how often a waiting call whose client gave a
// progressToken is told that the wait goes on: well within a client's
// request timeout, which a progress notification may reset.
const progressEvery = 5 * time.Second

// transient says whether err may go away by itself (exit 4, retry later:
// the database busy, its server or proxy not reachable now, a bd
// maintenance command running).
func transient(err error) bool { return exitCode(err) == ExitBusy }

// serveMCP serves the agent's tools on s. It reaches the database first
// (Store.Ping): a workspace that cannot be used for a reason that will not
// go away by itself (embedded Dolt in a build without its engine, a schema
// bd-claim does not support) is refused at startup, as a missing one is
// (serveMCPError); one that is busy now is served, as its calls will
// tell.
func serveMCP(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
	if err := s.Ping(ctx); err != nil && !transient(err) {
		return refuse(ctx, o, out.w, log, err)
	}
	return serveNamed(ctx, s, nil, o, out.w, log)
}

// refuse logs why the server cannot start, and serves that (serve).
func refuse(ctx context.Context, o *options, stdout io.Writer, log *slog.Logger, err error) int {
	log.Error("mcp_error", "agent", o.req.Agent, errAttr(err), o.elapsed())
	return serve(ctx, nil, nil, err, o, stdout, log)
}

// serveMCPError serves a server that could not start (a bad flag, no
// workspace; run has logged it): stdout carries the protocol still, and
// every tool call returns err with its code, so that the person reads it
// in the client. It exits with err's status once the client has gone. A
// database that could not be opened for a reason that may go away by
// itself (its Dolt server or proxy down, busy) is no such error: the
// server serves, and opens it at the first call that finds it back.
func serveMCPError(ctx context.Context, o *options, stdout io.Writer, log *slog.Logger, err error) int {
	if transient(err) {
		return serveNamed(ctx, nil, func(ctx context.Context) (*claim.Store, error) { return reopen(ctx, o) }, o, stdout, log)
	}
	return serve(ctx, nil, nil, err, o, stdout, log)
}

// reopen finds the workspace again and opens it with the settings the
// server started with: where its database is may have changed since (bd
// starts a workspace's Dolt server on a new port each time, in
// .beads/dolt-server.port).
func reopen(ctx context.Context, o *options) (*claim.Store, error) {
	again := *o
	var err error
	if again.ws, err = locate(o); err != nil {
		return nil, err
	}
	return openStore(ctx, &again)
}

// serveNamed serves the agent's tools on s (or the Store that open opens),
// once no other live server of this workspace serves the same agent name
// (see lockAgent).
func serveNamed(ctx context.Context, s *claim.Store, open func(context.Context) (*claim.Store, error), o *options, stdout io.Writer, log *slog.Logger) int {
	unlock, err := lockAgent(o)
	if err != nil {
		return refuse(ctx, o, stdout, log, err)
	}
	defer unlock()
	return serve(ctx, s, open, nil, o, stdout, log)
}

func serve(ctx context.Context, s *claim.Store, open func(context.Context) (*claim.Store, error), failed error, o *options, stdout io.Writer, log *slog.Logger) int {
	serving, stop := context.WithCancel(ctx)
	eof, stdinEnded := context.WithCancel(serving)
	m := &mcpServer{ctx: serving, eof: eof, store: s, open: open, failed: failed, agent: o.req.Agent, ws: o.ws, dirLabel: o.dirLabel, cfg: o.cfg,
		log: slog.New(interruptedAtInfo{log.Handler()}), renewing: map[string]*renewal{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "bd-claim", Title: "bd-claim: atomic claims of Beads issues", Version: version()}, &mcp.ServerOptions{
		Instructions: m.instructions(),
		// Tools only: the list never changes, and the logs go to stderr.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, t := range mcpTools {
		server.AddTool(t.tool(), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// A call ends when the server stops (the SDK does not cancel
			// it): a wait in progress is interrupted, nothing written.
			ctx, cancel := context.WithCancel(ctx)
			defer context.AfterFunc(serving, cancel)()
			defer cancel()
			return m.call(ctx, t, req), nil
		})
	}
	if failed == nil {
		log.Info("mcp_serving", "agent", m.agent, "db_path", m.ws.DBPath, "lease", o.cfg.Lease.String())
	}
	// It runs until stdin ends and every call read is answered, or ctx ends.
	err := server.Run(serving, &connTransport{newLineConn(os.Stdin, stdout, stdinEnded, log)})
	stop() // ends the renewals: the claims keep their leases, which lapse
	m.wg.Wait()
	m.closeOpened()
	log.Info("mcp_stopped", "agent", m.agent, "reason", stopReason(ctx, err), o.elapsed())
	switch {
	case ctx.Err() != nil:
		return ExitInterrupted
	case failed != nil:
		return exitCode(failed)
	}
	return ExitClaimed
}

// stopReason says why the server stopped: a signal (ctx ended), the
// client's end of the session (stdin ended: err is nil), or the error that
// ended it (stdout could not be written).
func stopReason(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil:
		return "SIGINT or SIGTERM"
	case err == nil:
		return "the client closed the session (stdin ended)"
	}
	return err.Error()
}

// instructions is what the server tells the client at initialize: how an
// agent takes, keeps and ends work with these tools (docs/mcp.md's AGENTS.md
// snippet), or why the server cannot serve.
func (m *mcpServer) instructions() string {
	if m.failed != nil {
		return fmt.Sprintf("bd-claim could not start: %s: %s. Every tool call returns this error until the server is "+
			"restarted with its configuration fixed (its --agent, --workspace, --db, or its working directory).",
			claim.ErrorCode(m.failed), claim.ErrorMessage(m.failed))
	}
	return fmt.Sprintf(`bd-claim hands out the ready issues of one Beads workspace to agents, atomically: you are agent %q.
Take work only with these tools, never bd ready + bd update (two agents could get the same issue).
- claim: if issue is set, it is yours, already in_progress and assigned to you; keep its claim_id. If issue is null, nothing is claimable for you now and reason says why: stop, or call claim again later (wait: "50s" waits for work; call again to wait longer).
- This server renews your claims' leases while it runs: do not call heartbeat yourself.
- When the work is done, call close with id, claim_id and a reason saying what was done (never bd close).
- If you cannot finish, call release with id, claim_id and a reason (failed: true when the attempt failed).
- On a tool error read error.code: SQLITE_BUSY, BUSY or DB_UNAVAILABLE means retry; ALREADY_CLAIMED on close or release means another agent took the issue over: stop working on it; report anything else.
- To look without taking: claim with dry_run: true (and explain: true to see why nothing is claimable).`, m.agent)
}

// storeNow is the server's Store, opened now when it could not be at
// startup (and by one call at a time).
func (m *mcpServer) storeNow(ctx context.Context) (*claim.Store, error) {
	m.opening.Lock()
	defer m.opening.Unlock()
	if m.store == nil {
		s, err := m.open(ctx)
		if err != nil {
			return nil, err
		}
		m.store = s
	}
	return m.store, nil
}

// closeOpened closes the Store the server opened itself (storeNow), once it
// has stopped; the one it was started with is its starter's to close.
func (m *mcpServer) closeOpened() {
	m.opening.Lock()
	defer m.opening.Unlock()
	if m.open != nil && m.store != nil {
		m.store.Close()
	}
}

// called is what the server reads back from a successful call's envelope.
type called struct {
	Issue *struct {
		ID string `json:"id"`
	} `json:"issue"`
	ClaimID        int64      `json:"claim_id"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`
	DryRun         bool       `json:"dry_run"`
}

// call runs one tool call as its command would run: flags parsed and
// validated, the settings the server started with under the call's own,
// the command's output captured as the result. An exit status other than
// 0 or 3 (no issue) is a tool error, whose message names the tool's
// arguments. A wait sends progress when the client asked for it, and ends
// when stdin does.
func (m *mcpServer) call(ctx context.Context, t *mcpTool, req *mcp.CallToolRequest) *mcp.CallToolResult {
	o := &options{start: time.Now(), ws: m.ws}
	var buf bytes.Buffer
	out := output{w: &buf, agent: m.agent}
	fs := newFlags(t.command, o)
	args, err := t.flags(req.Params.Arguments)
	if err == nil {
		if err = fs.Parse(append([]string{"--agent=" + m.agent}, args...)); err != nil {
			err = claim.Errorf(claim.EInvalid, "%v", err) // a value the flag cannot hold (claim_id 1.5)
		}
	}
	if err == nil {
		err = o.validate(t.command)
	}
	code := ExitInvalid
	var s *claim.Store
	switch {
	case m.failed != nil:
		code = out.fail(exitCode(m.failed), m.failed)
	case err != nil:
		m.log.Warn(t.command.event+"_error", "agent", m.agent, errAttr(err), o.elapsed())
		out.fail(code, err)
	default:
		if s, err = m.storeNow(ctx); err != nil {
			m.log.Error(t.command.event+"_error", "agent", m.agent, errAttr(err), o.elapsed())
			code = out.fail(exitCode(err), err)
			break
		}
		o.cfg, o.dirLabel = m.cfg, m.dirLabel
		o.overrides.Apply(&o.cfg)
		if o.req.Wait > 0 {
			defer context.AfterFunc(m.eof, cancelOf(&ctx))()
			if token := req.Params.GetProgressToken(); token != nil {
				defer m.progress(ctx, req.Session, token, o.req.Wait)()
			}
		}
		code = t.command.do(ctx, s, o, out, m.log)
	}
	text := bytes.TrimSpace(buf.Bytes())
	if code != ExitClaimed && code != ExitNoIssue && m.failed == nil { // a startup error names the server's flags
		var env envelope
		if json.Unmarshal(text, &env) == nil && env.Error != nil {
			env.Error.Message = t.argNames(env.Error.Message)
			text, _ = json.Marshal(env) // the envelope came from json.Marshal
		}
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: json.RawMessage(text),
		IsError: code != ExitClaimed && code != ExitNoIssue}
	var env called
	if t.after != nil && code == ExitClaimed && json.Unmarshal(text, &env) == nil && !env.DryRun { // a dry run changed nothing
		t.after(m, env)
	}
	return res
}

// cancelOf makes *ctx cancellable and returns its cancel.
func cancelOf(ctx *context.Context) func() {
	c, cancel := context.WithCancel(*ctx)
	*ctx = c
	return cancel
}

// progress tells the client, every progressEvery from the start of a wait
// of up to wait, how long it has waited, until the returned function stops
// it.
func (m *mcpServer) progress(ctx context.Context, session *mcp.ServerSession, token any, wait time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			waited := time.Since(start).Truncate(time.Second)
			err := session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: waited.Seconds(), Total: wait.Seconds(),
				Message: fmt.Sprintf("waiting for a claimable issue: %s of %s", waited, wait)})
			m.log.Debug("issue_claim_progress", "agent", m.agent, "waited", waited.String(), "sent", err == nil)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// interruptedAtInfo logs at INFO the error record of a call that was
// interrupted (the client cancelled it, or stdin or the server ended): the
// server did not fail.
type interruptedAtInfo struct{ slog.Handler }

func (h interruptedAtInfo) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelError {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "error" && slices.ContainsFunc(a.Value.Group(), func(a slog.Attr) bool {
				return a.Key == "code" && a.Value.String() == string(claim.EInterrupted)
			}) {
				r.Level = slog.LevelInfo
			}
			return true
		})
		if !h.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

// claimed starts renewing a claim made with a lease.
func (m *mcpServer) claimed(env called) {
	if env.LeaseExpiresAt != nil {
		m.renew(env.Issue.ID, env.ClaimID, *env.LeaseExpiresAt)
	}
}

// released stops renewing an issue given back or closed.
func (m *mcpServer) released(env called) { m.stopRenewal(env.Issue.ID, nil) }

// stopRenewal stops the renewal of issue id (only r's, when r is given).
func (m *mcpServer) stopRenewal(id string, r *renewal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.renewing[id]; cur != nil && (r == nil || cur == r) {
		cur.stop()
		delete(m.renewing, id)
	}
}

// renew keeps the lease of claim claimID on issue id fresh: a heartbeat at
// a third of the time left, for as long as the server runs and the agent
// holds the issue under that claim. A refusal (released, closed, taken
// over) ends it; another error (a busy database) is tried again.
func (m *mcpServer) renew(id string, claimID int64, until time.Time) {
	ctx, stop := context.WithCancel(m.ctx)
	r := &renewal{stop}
	m.stopRenewal(id, nil) // a re-claim replaces the renewal
	m.mu.Lock()
	m.renewing[id] = r
	m.mu.Unlock()
	m.wg.Go(func() {
		defer m.stopRenewal(id, r)
		for {
			timer := time.NewTimer(max(time.Until(until)/3, 100*time.Millisecond))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			res, err := m.store.Heartbeat(ctx, claim.HeartbeatRequest{Agent: m.agent, ID: id, ClaimID: claimID})
			if err == nil {
				until = res.Lease.Until
				m.log.Debug("issue_renewal_success", "agent", m.agent, "issue_id", id, "claim_id", claimID, "lease_expires_at", until)
				continue
			}
			m.log.Warn("issue_renewal_error", "agent", m.agent, "issue_id", id, "claim_id", claimID, errAttr(err), "stopped", exitCode(err) == ExitRefused)
			if exitCode(err) == ExitRefused {
				return
			}
		}
	})
}
