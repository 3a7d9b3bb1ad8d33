package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/sqlite"
)

// server is a running `bd-claim mcp` driven by the SDK's client.
type server struct {
	*mcp.ClientSession
	cmd     *exec.Cmd
	stderr  *syncBuffer
	outputs map[string]*jsonschema.Resolved // each tool's output schema, once listed
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve starts the built bd-claim as `mcp --agent AGENT args...` in dir
// (with GOCOVERDIR, as run does) and connects to it. It is closed (stdin
// closed, then waited for) at the end of the test unless the test closed or
// killed it.
func serve(t *testing.T, dir, agent string, args ...string) *server {
	t.Helper()
	return serveOver(t, func(cmd *exec.Cmd) mcp.Transport { return &mcp.CommandTransport{Command: cmd} }, dir, agent, args...)
}

// serveOver is serve with the client's transport made by transport.
func serveOver(t *testing.T, transport func(*exec.Cmd) mcp.Transport, dir, agent string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp", "--agent", agent}, args...)...)
	cmd.Dir = dir
	cmd.Env = baseEnv()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bd-claim-test", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), transport(cmd), nil)
	assert.NilError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	return &server{ClientSession: session, cmd: cmd, stderr: stderr}
}

// call calls a tool and returns its structured content as text, and
// whether it is a tool error.
func (s *server) call(t *testing.T, tool string, args any) (string, bool) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	assert.NilError(t, err, "%s %v: a protocol error; stderr %s", tool, args, s.stderr)
	assert.Equal(t, len(res.Content), 1)
	text := res.Content[0].(*mcp.TextContent).Text
	var fromText any
	assert.NilError(t, json.Unmarshal([]byte(text), &fromText))
	assert.DeepEqual(t, res.StructuredContent, fromText) // the text content is the envelope too
	s.conforms(t, tool, fromText)
	return text, res.IsError
}

// conforms checks a tool's result against the output schema the server
// lists for the tool.
func (s *server) conforms(t *testing.T, tool string, result any) {
	t.Helper()
	if s.outputs == nil {
		s.outputs = map[string]*jsonschema.Resolved{}
		res, err := s.ListTools(context.Background(), nil)
		assert.NilError(t, err)
		for _, tl := range res.Tools {
			b, err := json.Marshal(tl.OutputSchema)
			assert.NilError(t, err)
			var sc jsonschema.Schema
			assert.NilError(t, json.Unmarshal(b, &sc))
			s.outputs[tl.Name], err = sc.Resolve(nil)
			assert.NilError(t, err, tl.Name)
		}
	}
	assert.NilError(t, s.outputs[tool].Validate(result), "%s: the result does not conform to its output schema: %v", tool, result)
}

// callOK calls a tool that must succeed and decodes its envelope.
func (s *server) callOK(t *testing.T, tool string, args any) result {
	t.Helper()
	text, isErr := s.call(t, tool, args)
	assert.Assert(t, !isErr, "%s %v: %s", tool, args, text)
	var out result
	assert.NilError(t, json.Unmarshal([]byte(text), &out))
	assert.Equal(t, out.Status, "ok")
	return out
}

func TestMCPTools(t *testing.T) {
	t.Parallel()
	s := serve(t, claimtest.Fixture(t, "0.49.6"), "lister", "--quiet")
	res, err := s.ListTools(context.Background(), nil)
	assert.NilError(t, err)
	type schema struct {
		Type                 string                       `json:"type"`
		Properties           map[string]map[string]any    `json:"properties"`
		Required             []string                     `json:"required"`
		AdditionalProperties *bool                        `json:"additionalProperties"`
		Defs                 map[string]map[string]string `json:"$defs"`
	}
	type hints struct{ readOnly, destructive, idempotent bool }
	want := map[string]struct {
		args     map[string]string // argument → JSON type
		required []string
		hints    hints
		result   []string // properties of its output schema, beyond status, agent, issue and error
	}{
		"claim": {map[string]string{"id": "string", "claim_id": "integer", "labels": "array", "exclude_labels": "array",
			"min_priority": "integer", "types": "array", "parent": "string", "sort": "string", "only_unassigned": "boolean",
			"labels_any": "array", "label_pattern": "string", "label_regex": "string", "priority": "integer", "exclude_types": "array",
			"has_metadata_key": "string", "metadata_fields": "array", "include_deferred": "boolean",
			"dry_run": "boolean", "explain": "boolean", "resume": "boolean", "lease": "string", "max_held": "integer", "wait": "string"}, nil,
			hints{}, []string{"claim_id", "dry_run", "explain", "filters", "lease_expires_at", "reason", "took_over", "resumed"}},
		"release":   {map[string]string{"id": "string", "claim_id": "integer", "reason": "string", "failed": "boolean"}, []string{"id"}, hints{}, []string{"attempt"}},
		"close":     {map[string]string{"id": "string", "claim_id": "integer", "reason": "string", "dry_run": "boolean"}, []string{"id"}, hints{idempotent: true}, []string{"already_closed"}},
		"heartbeat": {map[string]string{"id": "string", "claim_id": "integer", "lease": "string"}, []string{"id"}, hints{idempotent: true}, []string{"lease_expires_at"}},
		"reset":     {map[string]string{"id": "string"}, []string{"id"}, hints{idempotent: true}, []string{"reset"}},
		"reap":      {map[string]string{"dry_run": "boolean", "older_than": "string"}, nil, hints{destructive: true, idempotent: true}, []string{"dry_run", "reaped"}},
		"stats":     {map[string]string{}, nil, hints{readOnly: true, idempotent: true}, []string{"generated_at", "in_progress", "last_hour", "policy", "ready_by_priority"}},
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		w, ok := want[tool.Name]
		assert.Assert(t, ok, tool.Name)
		assert.Assert(t, len(tool.Description) > 60, "%s: %q", tool.Name, tool.Description)
		b, err := json.Marshal(tool.InputSchema)
		assert.NilError(t, err)
		var sc schema
		assert.NilError(t, json.Unmarshal(b, &sc))
		assert.Equal(t, sc.Type, "object")
		assert.Assert(t, sc.AdditionalProperties != nil && !*sc.AdditionalProperties, "%s: unknown arguments must be refused", tool.Name)
		assert.DeepEqual(t, sc.Required, w.required)
		got := map[string]string{}
		for name, p := range sc.Properties {
			typ, ok := p["type"].(string) // one type, that a client can act on
			assert.Assert(t, ok, "%s.%s: type %v", tool.Name, name, p["type"])
			got[name] = typ
			desc, _ := p["description"].(string)
			assert.Assert(t, len(desc) > 10, "%s.%s has no description", tool.Name, name)
		}
		assert.DeepEqual(t, got, w.args)
		// Every hint said, as it is; none reaches outside the workspace.
		a := tool.Annotations
		assert.Assert(t, a.DestructiveHint != nil && a.OpenWorldHint != nil, tool.Name)
		assert.Equal(t, hints{a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint}, w.hints, tool.Name)
		assert.Assert(t, !*a.OpenWorldHint, tool.Name)
		assert.Assert(t, len(tool.Title) > 10 && a.Title == tool.Title, "%s: %q", tool.Name, tool.Title)
		// The output schema: an object whose status is ok or error, the
		// result's fields and the error envelope's.
		b, err = json.Marshal(tool.OutputSchema)
		assert.NilError(t, err)
		var out struct {
			Type       string                    `json:"type"`
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		}
		assert.NilError(t, json.Unmarshal(b, &out), string(b))
		assert.Equal(t, out.Type, "object")
		assert.DeepEqual(t, out.Required, []string{"status"})
		assert.DeepEqual(t, out.Properties["status"]["enum"], []any{"ok", "error"})
		for _, p := range append([]string{"agent", "issue", "error"}, w.result...) {
			assert.Assert(t, out.Properties[p] != nil, "%s: no %s in %s", tool.Name, p, b)
		}
	}
	slices.Sort(names)
	assert.DeepEqual(t, names, []string{"claim", "close", "heartbeat", "reap", "release", "reset", "stats"})
	// A description taken from the flag's help, one of the tool's own.
	claimTool := res.Tools[slices.IndexFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "claim" })]
	b, _ := json.Marshal(claimTool.InputSchema)
	assert.Assert(t, is.Contains(string(b), "only descendants of this issue")) // the --parent flag's help
	assert.Assert(t, is.Contains(string(b), "the server renews it while it runs"))
	assert.Assert(t, !strings.Contains(string(b), "--"), "flags in the claim tool's schema: %s", b) // "with --dry-run" is "with dry_run"
	assert.Assert(t, is.Contains(string(b), "with dry_run: count"))
}

// masked hides what differs between two runs at different instants:
// times, content hashes (they cover updated_at), claim ages.
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`), "<time>"},
	{regexp.MustCompile(`[0-9a-f]{64}`), "<hash>"},
	{regexp.MustCompile(`"age_seconds":\d+`), `"age_seconds":<n>`},
}

func masked(s string, roots ...string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	for _, r := range roots {
		s = strings.ReplaceAll(s, r, "<root>")
	}
	return s
}

func maskedSnapshot(t *testing.T, root string) map[string][]string {
	snap := claimtest.Snapshot(t, claimtest.DBPath(root))
	for table, rows := range snap {
		for i, r := range rows {
			rows[i] = masked(r)
		}
		slices.Sort(rows)
		snap[table] = rows
	}
	return snap
}

// Every tool does what its command does: on twin workspaces, the same
// requests through one server and through CLI processes give the same
// envelopes (a tool error exactly where the command fails) and leave the
// same rows.
func TestMCPFootprint(t *testing.T) {
	t.Parallel()
	c := claimtest.Cases(t, "0.49.6")
	a01, bobs := c["A01"].ID, c["S_INPROG"].ID
	viaCLI, viaMCP := claimtest.Fixture(t, "0.49.6"), claimtest.Fixture(t, "0.49.6")
	s := serve(t, viaMCP, "a", "--quiet")
	for _, step := range []struct {
		tool string
		args any
		cli  []string
		exit int
	}{
		{"claim", map[string]any{"labels": []string{"backend"}, "min_priority": "high", "lease": "1m"}, []string{"--label", "backend", "--min-priority", "high", "--lease", "1m"}, 0},
		{"claim", map[string]any{"resume": true, "labels": []string{"backend"}}, []string{"--resume", "--label", "backend"}, 0}, // the claim above, resumed
		{"claim", map[string]any{"id": a01, "lease": "1m"}, []string{"--id", a01, "--lease", "1m"}, 0},
		{"heartbeat", map[string]any{"id": a01, "lease": "2m"}, []string{"heartbeat", "--id", a01, "--lease", "2m"}, 0},
		{"release", map[string]any{"id": a01, "failed": true, "reason": "tests fail"}, []string{"release", "--id", a01, "--failed", "--reason", "tests fail"}, 0},
		{"reset", map[string]any{"id": a01}, []string{"reset", "--id", a01}, 0},
		{"claim", map[string]any{"dry_run": true, "explain": true, "types": []string{"bug", "task"}, "sort": "oldest", "exclude_labels": []string{"infra"}}, []string{"--dry-run", "--explain", "--type", "bug", "--type", "task", "--sort", "oldest", "--exclude-label", "infra"}, 0},
		{"claim", map[string]any{"parent": "fx-none", "only_unassigned": true, "max_held": 5}, []string{"--parent", "fx-none", "--only-unassigned", "--max-held", "5"}, 3},
		{"claim", map[string]any{"id": bobs}, []string{"--id", bobs}, 7},
		{"claim", map[string]any{"id": a01, "claim_id": 1}, []string{"--id", a01, "--claim-id", "1"}, 7},
		{"claim", map[string]any{"id": a01, "claim_id": "1"}, []string{"--id", a01, "--claim-id", "1"}, 7}, // an id kept as text
		{"release", map[string]any{"id": "fx-none"}, []string{"release", "--id", "fx-none"}, 7},
		{"heartbeat", map[string]any{"id": bobs}, []string{"heartbeat", "--id", bobs}, 7},
		{"claim", map[string]any{"id": a01}, []string{"--id", a01}, 0},
		{"release", map[string]any{"id": a01}, []string{"release", "--id", a01}, 0},
		{"reap", map[string]any{"dry_run": true}, []string{"reap", "--dry-run"}, 0},
		{"reap", map[string]any(nil), []string{"reap"}, 0}, // arguments: null
		{"stats", nil, []string{"stats"}, 0}, // the SDK sends {}
	} {
		r := run(t, viaCLI, nil, append(step.cli, "--agent", "a", "--quiet")...)
		assert.Equal(t, r.ExitCode, step.exit, "%q: %s", step.cli, r.Stdout())
		got, isErr := s.call(t, step.tool, step.args)
		assert.Equal(t, isErr, step.exit != 0 && step.exit != 3, "%s %v: %s", step.tool, step.args, got)
		assert.Equal(t, masked(got, viaMCP), masked(strings.TrimSpace(r.Stdout()), viaCLI), "%s %v", step.tool, step.args)
	}
	assert.DeepEqual(t, claimtest.Diff(maskedSnapshot(t, viaCLI), maskedSnapshot(t, viaMCP)), map[string][2][]string{})
}

// Bad arguments are tool errors with the CLI's INVALID_ARGUMENT envelope,
// never a protocol error or a crash; the server goes on serving.
func TestMCPBadArguments(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	sum := claimtest.FileSum(t, claimtest.DBPath(root))
	s := serve(t, root, "a", "--quiet")
	for _, tc := range []struct {
		tool string
		args any
		msg  string
	}{
		{"claim", map[string]any{"lease": 2}, "argument lease must be a string, not number"},
		{"claim", map[string]any{"claim_id": "seven", "id": "fx-1"}, `argument claim_id must be the integer a claim returned (or its digits as a string), not the string "seven"`},
		{"claim", map[string]any{"claim_id": true, "id": "fx-1"}, "argument claim_id must be the integer a claim returned (or its digits as a string), not boolean"},
		{"claim", map[string]any{"claim_id": 1.5, "id": "fx-1"}, `invalid argument "1.5" for "claim_id"`},
		{"release", map[string]any{"claim_id": "-3", "id": "fx-1"}, "claim id -3 is not a claim id"},
		{"claim", map[string]any{"max_held": 1.5}, "argument max_held must be an integer, not number 1.5"},
		{"claim", map[string]any{"labels": "backend"}, "argument labels must be an array of strings, not string"},
		{"claim", map[string]any{"dry_run": "yes"}, "argument dry_run must be a boolean, not string"},
		{"claim", map[string]any{"agent": "someone-else"}, `unknown field "agent"`},
		{"claim", []any{1}, "the arguments must be a JSON object"},
		{"claim", map[string]any{"sort": "random"}, `unknown sort "random"`},
		{"claim", map[string]any{"min_priority": "urgent"}, `unknown priority "urgent"`},
		{"claim", map[string]any{"wait": "soon"}, `wait: "soon" is not a duration`},
		{"claim", map[string]any{"lease": "10ms"}, "lease: 10ms is shorter than 1s"},
		{"claim", map[string]any{"lease": "-5m"}, "lease: -5m is negative"},
		{"claim", map[string]any{"labels": []string{" "}}, "empty value in labels, labels_any, exclude_labels or types"},
		{"claim", map[string]any{"explain": true}, "explain needs dry_run"},
		{"claim", map[string]any{"dry_run": true, "lease": "1m"}, "lease on a dry run"},
		{"claim", map[string]any{"claim_id": 5}, "give its id too"},
		{"claim", map[string]any{"resume": true, "id": "fx-1"}, "resume with id: resume returns an issue you already hold"},
		{"claim", map[string]any{"id": ""}, "id is empty: give an issue id, or omit id"}, // not absent: no claim-next
		{"claim", map[string]any{"id": nil}, "argument id is null: give a string, or leave it out"},
		{"claim", map[string]any{"id": "", "dry_run": true}, "id is empty"},
		{"claim", map[string]any{"labels": nil}, "argument labels is null: give an array of strings"},
		{"claim", map[string]any{"max_held": -1}, `max_held: "-1" is not a whole number`},
		{"claim", map[string]any{"min_priority": 5}, `unknown priority "5"`},
		{"claim", map[string]any{"min_priority": 1.5}, `unknown priority "1.5"`},
		{"claim", map[string]any{"min_priority": true}, "arguments min_priority and priority must be an integer from 0 to 4 or a string such as \"P1\" or \"high\", not boolean"},
		{"claim", map[string]any{"min_priority": []int{1}}, "not array"},
		{"claim", map[string]any{"min_priority": map[string]int{"p": 1}}, "not object"},
		{"claim", map[string]any{"id": strings.Repeat("x", 1<<20)}, "id is 1048576 characters long; the limit is 255"},
		{"claim", map[string]any{"wait": strings.Repeat("9", 1<<20)}, "wait is 1048576 characters long; the limit is 255"},
		{"claim", map[string]any{"types": []string{"bug", strings.Repeat("t", 256)}}, "types is 256 characters long; the limit is 255"},
		{"release", map[string]any{}, "no issue id: id is required"},
		{"release", map[string]any{"id": "fx-1", "reason": "bad\x07bell"}, "control character"},
		{"release", map[string]any{"id": "fx-1", "claim_id": -3}, "claim id -3 is not a claim id"},
		{"heartbeat", map[string]any{"id": "fx-1", "lease": "1000h"}, "lease: 1000h is longer than the limit"},
		{"release", map[string]any{"id": ""}, "id is required"},
		{"heartbeat", map[string]any{"id": "", "lease": "1m"}, "id is required"},
		{"reset", map[string]any{"id": nil}, "argument id is null"},
		{"reset", map[string]any{"id": ""}, "id is required"},
		{"reap", map[string]any{"dry_run": 1}, "argument dry_run must be a boolean, not number"},
		{"reap", map[string]any{"dry_run": nil}, "argument dry_run is null: give a boolean"},
		{"stats", map[string]any{"verbose": true}, `unknown field "verbose"`},
	} {
		text, isErr := s.call(t, tc.tool, tc.args)
		assert.Assert(t, isErr, "%s %v: %s", tc.tool, tc.args, text)
		var out result
		assert.NilError(t, json.Unmarshal([]byte(text), &out))
		assert.Equal(t, out.Status, "error")
		assert.Equal(t, out.Agent, "a")
		assert.Equal(t, out.Error.Code, claim.EInvalid, "%s %v: %s", tc.tool, tc.args, text)
		assert.Assert(t, is.Contains(out.Error.Message, tc.msg), "%s %v: %s", tc.tool, tc.args, firstN(out.Error.Message, 300))
		assert.Assert(t, !strings.Contains(out.Error.Message, "--"), "a flag in %q", out.Error.Message) // the tool's arguments, not the command's flags
		assert.Assert(t, len(text) < 1000, "%d bytes: a value echoed", len(text))
	}
	assert.NilError(t, s.Close())
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum, "a bad call changed the database")
}

// A claim with a lease is renewed by its server: held after four times its
// lease; once the server dies (SIGKILL), the lease lapses and another agent
// takes the issue over within it.
func TestMCPRenewal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the renewal test takes 12s")
	}
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	a01 := claimtest.Cases(t, "0.49.6")["A01"].ID
	s := serve(t, root, "holder", "--log-level", "debug")
	got := s.callOK(t, "claim", map[string]any{"id": a01, "lease": "2s"})
	time.Sleep(8 * time.Second)
	refused, _ := lc(t, root, nil, "--agent", "taker", "--id", a01)
	assert.Equal(t, refused.Error.Code, claim.EAlready, "the lease lapsed while its server ran")
	assert.Equal(t, refused.Error.HolderClaimID, got.ClaimID)
	assert.Assert(t, strings.Count(s.stderr.String(), `"msg":"issue_renewal_success"`) >= 8, s.stderr.String())

	assert.NilError(t, s.cmd.Process.Kill())
	killed := time.Now()
	var took result
	for {
		var r *icmd.Result
		if took, r = lc(t, root, nil, "--agent", "taker", "--id", a01); r.ExitCode == 0 {
			break
		}
		assert.Equal(t, took.Error.Code, claim.EAlready)
		// The lease runs 2s from the last renewal, its end rounded up to a second.
		assert.Assert(t, time.Since(killed) < 3500*time.Millisecond, "not taken over %s after the kill", time.Since(killed))
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, took.TookOver.Agent, "holder")
	assert.Equal(t, took.TookOver.ClaimID, got.ClaimID)
}

// A dry run renews nothing: a dry run of resume returns the issue the
// agent holds, with its lease, and the server does not start renewing it
// (docs/lifecycle.md: a dry run renews nothing).
func TestMCPDryRunRenewsNothing(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	a01 := claimtest.Cases(t, "0.49.6")["A01"].ID
	lcOK(t, root, nil, "--agent", "holder", "--id", a01, "--lease", "1s")
	s := serve(t, root, "holder", "--log-level", "debug")
	got := s.callOK(t, "claim", map[string]any{"dry_run": true, "resume": true})
	assert.Equal(t, got.Issue.ID, a01)
	assert.Assert(t, got.Resumed && got.LeaseExpiresAt != nil, "%+v", got)
	time.Sleep(2 * time.Second) // a renewal of a 1s lease beats every 333ms
	assert.NilError(t, s.Close())
	assert.Assert(t, !strings.Contains(s.stderr.String(), `"msg":"issue_renewal`), s.stderr.String())
}

// A renewal stops when its claim ends elsewhere (released by a CLI process
// here): the refused heartbeat is logged once and not tried again; a
// renewal stopped by a release through the server never beats again; a
// claim still held is renewed until the server exits, and then lapses.
func TestMCPRenewalStops(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	c := claimtest.Cases(t, "0.49.6")
	a01, a02, a03 := c["A01"].ID, c["A02"].ID, c["A03"].ID
	s := serve(t, root, "holder", "--log-level", "debug")
	s.callOK(t, "claim", map[string]any{"id": a01, "lease": "1s"})
	s.callOK(t, "claim", map[string]any{"id": a02, "lease": "1s"})
	held := s.callOK(t, "claim", map[string]any{"id": a03, "lease": "1s"})
	s.callOK(t, "release", map[string]any{"id": a02})
	lcOK(t, root, nil, "release", "--agent", "holder", "--id", a01)
	time.Sleep(2 * time.Second)
	assert.NilError(t, s.Close())
	logs := s.stderr.String()
	// A claim may be renewed before it ends (a renewal can come before a
	// slow release); never after: a02 after its release through the
	// server, a01 after its refused heartbeat.
	renewed, ended := 0, map[string]bool{}
	for _, line := range strings.Split(logs, "\n") {
		switch {
		case strings.Contains(line, `"msg":"issue_release_success"`):
			ended[a02] = ended[a02] || strings.Contains(line, `"issue_id":"`+a02+`"`)
		case strings.Contains(line, `"msg":"issue_renewal_error"`):
			assert.Assert(t, is.Contains(line, `"issue_id":"`+a01+`"`))
			assert.Assert(t, is.Contains(line, `"stopped":true`))
			ended[a01] = true
		case strings.Contains(line, `"msg":"issue_renewal_success"`):
			for _, id := range []string{a01, a02} {
				assert.Assert(t, !ended[id] || !strings.Contains(line, `"issue_id":"`+id+`"`), "renewed after its end: %s", line)
			}
			if strings.Contains(line, `"issue_id":"`+a03+`"`) {
				renewed++
			}
		}
	}
	assert.Equal(t, strings.Count(logs, `"msg":"issue_renewal_error"`), 1, logs)
	assert.Assert(t, renewed >= 2, logs)
	// The exit released nothing: a03 is still held under its claim until
	// its lease ends.
	refused, _ := lc(t, root, nil, "--agent", "other", "--id", a03)
	assert.Equal(t, refused.Error.Code, claim.EAlready)
	assert.Equal(t, refused.Error.HolderClaimID, held.ClaimID)
}

// 16 servers for 16 agents drain a workspace: each ready issue is claimed
// exactly once, no blocked issue at all.
func TestMCPRace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 16 servers race")
	}
	t.Parallel()
	dir := t.TempDir()
	d, err := sqlite.CreateDemo(context.Background(), dir, 120, 11)
	assert.NilError(t, err)
	var mu sync.Mutex
	owner := map[string][]string{}
	var wg sync.WaitGroup
	for p := range 16 {
		agent := fmt.Sprintf("mcp-%d", p)
		s := serve(t, dir, agent, "--quiet", "--timeout-ms", "20000")
		wg.Go(func() {
			for {
				got := s.callOK(t, "claim", map[string]any{"only_unassigned": true})
				if got.Issue == nil {
					return
				}
				mu.Lock()
				owner[got.Issue.ID] = append(owner[got.Issue.ID], agent)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, len(owner), len(d.Ready))
	for _, id := range d.Ready {
		assert.Equal(t, len(owner[id]), 1, "%s: %v", id, owner[id])
	}
	for _, id := range d.Blocked {
		assert.Equal(t, len(owner[id]), 0, id)
	}
}

// A wait in progress ends promptly when stdin closes (the server exits 0)
// or on SIGTERM (130), and writes nothing.
func TestMCPWaitInterrupted(t *testing.T) {
	for how, reason := range map[string]string{"stdin closed": "the client closed the session (stdin ended)", "SIGTERM": "SIGINT or SIGTERM"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			root := claimtest.Fixture(t, "0.49.6")
			db := claimtest.DBPath(root)
			files, sum := listFiles(t, root), claimtest.FileSum(t, db)
			// The SDK's client closes the server's stdin only once its
			// calls are done: here the test holds the pipe and closes it
			// mid-call, as a crashed client would.
			var stdin io.WriteCloser
			s := serveOver(t, func(cmd *exec.Cmd) mcp.Transport {
				var err error
				stdin, err = cmd.StdinPipe()
				assert.NilError(t, err)
				stdout, err := cmd.StdoutPipe()
				assert.NilError(t, err)
				assert.NilError(t, cmd.Start())
				return &mcp.IOTransport{Reader: stdout, Writer: stdin}
			}, root, "w", "--log-level", "debug")
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, _ := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "claim", Arguments: map[string]any{"labels": []string{"no-such-label"}, "wait": "30s"}})
				done <- res
			}()
			waitForText(t, s.stderr, "issue_claim_waiting")
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			exit := 0
			if how == "SIGTERM" {
				exit = 130
				assert.NilError(t, s.cmd.Process.Signal(syscall.SIGTERM))
			} else {
				assert.NilError(t, stdin.Close())
			}
			// The call fails, or (a signal) may still be told it was interrupted.
			if res := <-done; res != nil {
				assert.Assert(t, res.IsError)
				assert.Assert(t, is.Contains(res.Content[0].(*mcp.TextContent).Text, `"code":"INTERRUPTED"`))
			}
			_ = s.cmd.Wait()
			assert.Assert(t, time.Since(start) < 2*time.Second, "exited %s after %s", time.Since(start), how)
			assert.Equal(t, s.cmd.ProcessState.ExitCode(), exit, s.stderr.String())
			assert.Assert(t, is.Contains(s.stderr.String(), `"code":"INTERRUPTED"`))
			assert.Assert(t, is.Contains(s.stderr.String(), `"msg":"mcp_stopped","agent":"w","reason":"`+reason+`"`))
			assert.Equal(t, claimtest.FileSum(t, db), sum, "database changed")
			assert.DeepEqual(t, listFiles(t, root), files)
		})
	}
}

func waitForText(t *testing.T, b *syncBuffer, text string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.String(), text); time.Sleep(20 * time.Millisecond) {
		assert.Assert(t, time.Now().Before(deadline), "no %q in %s", text, b.String())
	}
}

// The MCP server started without --agent acts as $BEADS_ACTOR, which
// outranks $BD_ACTOR, as bd's own commands do.
func TestMCPAgentFromBeadsActor(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "mcp", "--quiet")
	cmd.Dir = claimtest.Fixture(t, "0.49.6")
	cmd.Env = append(baseEnv(), "BEADS_ACTOR=from-beads", "BD_ACTOR=from-bd")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bd-claim-test", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	assert.NilError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	s := &server{ClientSession: session, cmd: cmd, stderr: stderr}
	out := s.callOK(t, "claim", map[string]any{"dry_run": true})
	assert.Equal(t, out.Agent, "from-beads")
	assert.Assert(t, out.Issue != nil)
	assert.Assert(t, is.Contains(session.InitializeResult().Instructions, `you are agent "from-beads"`))
}

// The protocol lets a client omit a call's arguments (the SDK's client
// always sends an object): a tool without required arguments then runs
// with none.
func TestMCPCallWithoutArguments(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "mcp", "--agent", "a", "--quiet")
	cmd.Dir = claimtest.Fixture(t, "0.49.6")
	cmd.Env = baseEnv()
	stdin, err := cmd.StdinPipe()
	assert.NilError(t, err)
	stdout, err := cmd.StdoutPipe()
	assert.NilError(t, err)
	assert.NilError(t, cmd.Start())
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stats"}}`,
	} {
		_, err := io.WriteString(stdin, msg+"\n")
		assert.NilError(t, err)
	}
	dec := json.NewDecoder(stdout)
	for {
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				IsError           bool   `json:"isError"`
				StructuredContent result `json:"structuredContent"`
			} `json:"result"`
		}
		assert.NilError(t, dec.Decode(&resp))
		if resp.ID == 2 {
			assert.Assert(t, !resp.Result.IsError)
			assert.Equal(t, resp.Result.StructuredContent.Status, "ok")
			break
		}
	}
	assert.NilError(t, stdin.Close())
	assert.NilError(t, cmd.Wait())
}

func firstN(s string, n int) string { return s[:min(n, len(s))] }
