package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
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
	usage: "bd-claim mcp --agent NAME [--workspace DIR | --db PATH] [settings]",
	about: "Serve the claim lifecycle (claim, release, close, heartbeat, reset, reap, stats) as MCP tools over\n" +
		"stdio for one agent. Claims with a lease are renewed by the server while it runs; when it\n" +
		"exits, their leases lapse (nothing is released). stdout carries only the protocol.",
	flags: func(fs *pflag.FlagSet, o *options) {
		settingFlags(fs, o, append([]string{"lease", "max-held"}, policyNames...)...)
	},
	check: agentCheck,
	do:    serveMCP,
}

// The arguments of each tool. json names the argument, flag the command's
// flag it stands for; a description comes from the flag's help unless a
// jsonschema tag gives one. Every argument is optional in the schema but
// id where the command requires --id; what is required or allowed is
// decided by the command's validation.
type (
	claimArgs struct {
		ID              string   `json:"id,omitempty" flag:"id" jsonschema:"claim this issue only (compare-and-swap); omit to claim the next ready issue"`
		ClaimID         int64    `json:"claim_id,omitempty" flag:"claim-id" jsonschema:"with id: succeed only while you still hold the issue under this claim_id"`
		Labels          []string `json:"labels,omitempty" flag:"label" jsonschema:"only issues with all of these labels"`
		LabelsAny       []string `json:"labels_any,omitempty" flag:"label-any" jsonschema:"only issues with at least one of these labels"`
		ExcludeLabels   []string `json:"exclude_labels,omitempty" flag:"exclude-label" jsonschema:"skip issues with any of these labels"`
		LabelPattern    string   `json:"label_pattern,omitempty" flag:"label-pattern"`
		LabelRegex      string   `json:"label_regex,omitempty" flag:"label-regex"`
		MinPriority     string   `json:"min_priority,omitempty" flag:"min-priority"`
		Priority        string   `json:"priority,omitempty" flag:"priority"`
		Types           []string `json:"types,omitempty" flag:"type" jsonschema:"only issues of one of these types (bug, task, feature, chore...)"`
		ExcludeTypes    []string `json:"exclude_types,omitempty" flag:"exclude-type" jsonschema:"skip issues of these types too (ignored with types)"`
		HasMetadataKey  string   `json:"has_metadata_key,omitempty" flag:"has-metadata-key"`
		MetadataFields  []string `json:"metadata_fields,omitempty" flag:"metadata-field" jsonschema:"only issues whose metadata matches each key=value"`
		IncludeDeferred bool     `json:"include_deferred,omitempty" flag:"include-deferred"`
		Parent          string   `json:"parent,omitempty" flag:"parent"`
		Sort            string   `json:"sort,omitempty" flag:"sort"`
		OnlyUnassigned  bool     `json:"only_unassigned,omitempty" flag:"only-unassigned"`
		DryRun          bool     `json:"dry_run,omitempty" flag:"dry-run"`
		Explain         bool     `json:"explain,omitempty" flag:"explain"`
		Lease           string   `json:"lease,omitempty" flag:"lease" jsonschema:"lease of the claim as a Go duration (10m); the server renews it while it runs. Default: the lease setting"`
		MaxHeld         int      `json:"max_held,omitempty" flag:"max-held" jsonschema:"claim nothing new while you hold this many in_progress issues; 0 = no limit. Default: the max-held setting"`
		Wait            string   `json:"wait,omitempty" flag:"wait"`
	}
	releaseArgs struct {
		ID      string `json:"id" flag:"id"`
		ClaimID int64  `json:"claim_id,omitempty" flag:"claim-id"`
		Reason  string `json:"reason,omitempty" flag:"reason"`
		Failed  bool   `json:"failed,omitempty" flag:"failed"`
	}
	closeArgs struct {
		ID      string `json:"id" flag:"id"`
		ClaimID int64  `json:"claim_id,omitempty" flag:"claim-id"`
		Reason  string `json:"reason,omitempty" flag:"reason"`
		DryRun  bool   `json:"dry_run,omitempty" flag:"dry-run"`
	}
	heartbeatArgs struct {
		ID      string `json:"id" flag:"id"`
		ClaimID int64  `json:"claim_id,omitempty" flag:"claim-id"`
		Lease   string `json:"lease,omitempty" flag:"lease" jsonschema:"the new lease from now, as a Go duration (10m); default: the claim's lease length"`
	}
	resetArgs struct {
		ID string `json:"id" flag:"id"`
	}
	reapArgs struct {
		DryRun bool `json:"dry_run,omitempty" flag:"dry-run"`
	}
	statsArgs struct{}
)

// mcpTool is one tool: the command it runs and the type of its arguments.
type mcpTool struct {
	name, description string
	command           *command
	args              reflect.Type
	readOnly          bool
	after             func(m *mcpServer, env called) // runs after a call that succeeded
}

var mcpTools = []*mcpTool{
	{name: "claim", command: claimCommand, args: reflect.TypeFor[claimArgs](), after: (*mcpServer).claimed,
		description: "Take work: atomically claim the next ready issue (or the one named by id) for you. " +
			"On success the issue is yours, already in_progress and assigned to you: work on it, keep claim_id, " +
			"and when done close it with the close tool. issue null (with reason) means nothing is claimable now: " +
			"retry later or pass wait. With a lease (argument or setting) the server keeps renewing it while it runs. " +
			"dry_run looks without taking; dry_run with explain counts what each rule excludes. " +
			"Errors: ALREADY_CLAIMED (error.holder has it), NOT_CLAIMABLE (the message says why), ISSUE_NOT_FOUND, SQLITE_BUSY (retry)."},
	{name: "release", command: releaseCommand, args: reflect.TypeFor[releaseArgs](), after: (*mcpServer).released,
		description: "Give back an issue you hold and cannot finish: it returns to open, unassigned, for another agent. " +
			"Give a reason; set failed when the attempt failed (the issue then waits out a backoff and is abandoned " +
			"after too many failures). Do not use it for finished work: close that with the close tool."},
	{name: "close", command: closeCommand, args: reflect.TypeFor[closeArgs](), after: (*mcpServer).closed,
		description: "Finish an issue you hold: close it, with a reason, as `bd close ID --reason` does; the issues it blocked " +
			"become ready. Only you, holding it (under claim_id when given), can close it: after your lease expired and " +
			"another agent took it over, close is refused (ALREADY_CLAIMED) and their claim is untouched. Closing an " +
			"issue you closed already succeeds without a change (already_closed). dry_run checks without closing. " +
			"Errors: ALREADY_CLAIMED, NOT_CLAIMABLE (not held by you, or bd refuses to close it: blocked, open children), ISSUE_NOT_FOUND."},
	{name: "heartbeat", command: heartbeatCommand, args: reflect.TypeFor[heartbeatArgs](),
		description: "Renew the lease of an issue you hold, from now. The server already renews the claims it made; " +
			"use this to change a lease's length or to renew a claim made elsewhere."},
	{name: "reset", command: resetCommand, args: reflect.TypeFor[resetArgs](),
		description: "Clear an issue's failed attempts and remove its abandoned label, so that claim hands it out again."},
	{name: "reap", command: reapCommand, args: reflect.TypeFor[reapArgs](),
		description: "Return every claim whose lease has expired to open (any agent's); dry_run lists them without changing anything."},
	{name: "stats", command: statsCommand, args: reflect.TypeFor[statsArgs](), readOnly: true,
		description: "Show the workspace's claim state: ready issues by priority, blocked, who holds what and since when, " +
			"expired leases, issues in backoff or abandoned, and the last hour's claims and releases."},
}

// tool is t as the server lists it: its input schema is inferred from its
// arguments, each described by its flag's help unless it has its own.
func (t *mcpTool) tool() *mcp.Tool {
	// The argument types are fixed: ForType fails only on a Go type it
	// cannot describe, and AddTool refuses the nil schema at once.
	schema, _ := jsonschema.ForType(t.args, nil)
	fs := newFlags(t.command, &options{})
	for i := range t.args.NumField() {
		f := t.args.Field(i)
		p := schema.Properties[argName(f)]
		if p.Description == "" {
			p.Description = fs.Lookup(f.Tag.Get("flag")).Usage
		}
	}
	return &mcp.Tool{Name: t.name, Description: t.description, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.readOnly}}
}

func argName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

var kindNames = map[reflect.Kind]string{reflect.String: "a string", reflect.Int: "an integer", reflect.Int64: "an integer",
	reflect.Bool: "a boolean", reflect.Slice: "an array of strings"}

// flags turns a call's raw arguments into the command's flags. The
// arguments are decoded strictly into the tool's type (no unknown field, no
// wrong type); each argument present becomes --flag=value (a list, one per
// element), so that the command parses and validates it as on the command
// line.
func (t *mcpTool) flags(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
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
		if errors.As(err, &te) {
			return nil, claim.Errorf(claim.EInvalid, "argument %s must be %s, not %s", te.Field, kindNames[te.Type.Kind()], te.Value)
		}
		return nil, claim.Errorf(claim.EInvalid, "%s (see the tool's input schema)", strings.TrimPrefix(err.Error(), "json: "))
	}
	var args []string
	for i := range t.args.NumField() {
		f := t.args.Field(i)
		if raw, ok := given[argName(f)]; !ok || string(raw) == "null" {
			continue
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
// settings it was started with, and the renewals of its leased claims.
type mcpServer struct {
	ctx      context.Context // ends when the server stops
	store    *claim.Store
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

func serveMCP(ctx context.Context, s *claim.Store, o *options, out output, log *slog.Logger) int {
	serving, stop := context.WithCancel(ctx)
	m := &mcpServer{ctx: serving, store: s, agent: o.req.Agent, ws: o.ws, dirLabel: o.dirLabel, cfg: o.cfg, log: log, renewing: map[string]*renewal{}}
	server := mcp.NewServer(&mcp.Implementation{Name: "bd-claim", Version: version()}, nil)
	for _, t := range mcpTools {
		server.AddTool(t.tool(), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// A call ends when the server stops (the SDK does not cancel
			// it): a wait in progress is interrupted, nothing written.
			ctx, cancel := context.WithCancel(ctx)
			defer context.AfterFunc(serving, cancel)()
			defer cancel()
			return m.call(ctx, t, req.Params.Arguments), nil
		})
	}
	log.Info("mcp_serving", "agent", m.agent, "db_path", s.Workspace.DBPath, "lease", o.cfg.Lease.String())
	err := server.Run(serving, &mcp.IOTransport{Reader: stopOnEOF{os.Stdin, stop}, Writer: nopWriteCloser{out.w}})
	stop() // ends the renewals: the claims keep their leases, which lapse
	m.wg.Wait()
	log.Info("mcp_stopped", "agent", m.agent, "reason", fmt.Sprint(err), o.elapsed())
	if ctx.Err() != nil {
		return ExitInterrupted
	}
	return ExitClaimed
}

// stopOnEOF stops the server when stdin ends: the client has gone.
type stopOnEOF struct {
	io.ReadCloser
	stop context.CancelFunc
}

func (r stopOnEOF) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil {
		r.stop()
	}
	return n, err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

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
// 0 or 3 (no issue) is a tool error.
func (m *mcpServer) call(ctx context.Context, t *mcpTool, raw json.RawMessage) *mcp.CallToolResult {
	o := &options{start: time.Now(), ws: m.ws}
	var buf bytes.Buffer
	out := output{w: &buf, agent: m.agent}
	fs := newFlags(t.command, o)
	args, err := t.flags(raw)
	if err == nil {
		err = fs.Parse(append([]string{"--agent=" + m.agent}, args...))
	}
	if err == nil {
		err = o.validate(t.command)
	}
	code := ExitInvalid
	if err != nil {
		m.log.Warn(t.command.event+"_error", "agent", m.agent, errAttr(err), o.elapsed())
		out.fail(code, err)
	} else {
		o.cfg, o.dirLabel = m.cfg, m.dirLabel
		o.overrides.Apply(&o.cfg)
		code = t.command.do(ctx, m.store, o, out, m.log)
	}
	text := bytes.TrimSpace(buf.Bytes())
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: json.RawMessage(text),
		IsError: code != ExitClaimed && code != ExitNoIssue}
	var env called
	if t.after != nil && code == ExitClaimed && json.Unmarshal(text, &env) == nil {
		t.after(m, env)
	}
	return res
}

// claimed starts renewing a claim made with a lease.
func (m *mcpServer) claimed(env called) {
	if env.LeaseExpiresAt != nil {
		m.renew(env.Issue.ID, env.ClaimID, *env.LeaseExpiresAt)
	}
}

// released stops renewing an issue given back.
func (m *mcpServer) released(env called) { m.stopRenewal(env.Issue.ID, nil) }

// closed stops renewing an issue closed (not one a dry run checked).
func (m *mcpServer) closed(env called) {
	if !env.DryRun {
		m.released(env)
	}
}

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
