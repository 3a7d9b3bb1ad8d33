package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// rpc is a JSON-RPC message as the server writes it.
type rpc struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  *struct {
		Instructions      string         `json:"instructions"`
		Capabilities      map[string]any `json:"capabilities"`
		IsError           bool           `json:"isError"`
		StructuredContent *result        `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// piped runs `bd-claim mcp args...` in dir with input on its stdin, which
// then ends (as printf ... | bd-claim mcp does), and returns the messages
// it wrote (every line of stdout must be one), its stderr and its exit
// status.
func piped(t *testing.T, dir string, env []string, input []string, args ...string) ([]rpc, string, int) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), env...)
	cmd.Stdin = strings.NewReader(strings.Join(input, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil {
		assert.Assert(t, errors.As(err, &exit), "%v", err)
	}
	var msgs []rpc
	for _, l := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		var m rpc
		assert.NilError(t, json.Unmarshal([]byte(l), &m), "stdout carries the protocol only: %q", l)
		assert.Equal(t, m.JSONRPC, "2.0", l)
		msgs = append(msgs, m)
	}
	return msgs, stderr.String(), cmd.ProcessState.ExitCode()
}

// byID is the answer to call id.
func byID(t *testing.T, msgs []rpc, id string) rpc {
	t.Helper()
	for _, m := range msgs {
		if string(m.ID) == id {
			return m
		}
	}
	t.Fatalf("no answer to call %s in %+v", id, msgs)
	return rpc{}
}

const (
	initialize  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

func toolCall(id int, tool, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

// A line that is no message is answered with a JSON-RPC error, and the
// session goes on; what was read before stdin ended is answered, in each
// of several runs (no initialized notification: as printf sends it).
func TestMCPMalformedLines(t *testing.T) {
	t.Parallel()
	for run := range 3 {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			t.Parallel()
			root := claimtest.Fixture(t, "0.49.6")
			msgs, stderr, exit := piped(t, root, nil, []string{
				initialize,
				`{"jsonrpc":"2.0","id":5,"method":"tools/call",`, // cut short
				`{"jsonrpc":"2.0","id":7,"method":1}`,            // JSON, no message
				`[]`,
				"",
				strings.Repeat("x", mcp.DefaultMaxLineLength+10),
				toolCall(2, "claim", `{"labels":["backend"]}`),
				toolCall(3, "stats", `{}`),
			}, "--agent", "piped")
			assert.Equal(t, exit, 0, stderr)
			assert.Assert(t, byID(t, msgs, "1").Result != nil)
			claimed := byID(t, msgs, "2").Result
			assert.Assert(t, !claimed.IsError && claimed.StructuredContent.Issue != nil, "%+v", claimed)
			assert.Equal(t, byID(t, msgs, "3").Result.StructuredContent.Status, "ok")
			invalid := byID(t, msgs, "7").Error
			assert.Equal(t, invalid.Code, -32600)
			var codes []int
			for _, m := range msgs {
				if string(m.ID) == "null" {
					codes = append(codes, m.Error.Code)
				}
			}
			assert.DeepEqual(t, codes, []int{-32700, -32600, -32700}) // the cut line, [], the long line
			assert.Equal(t, strings.Count(stderr, `"msg":"mcp_bad_message"`), 4, stderr)
			// The claim was made, and is held.
			got, _ := lc(t, root, nil, "--agent", "other", "--id", claimed.StructuredContent.Issue.ID)
			assert.Equal(t, got.Error.Code, claim.EAlready)
		})
	}
}

// A server that cannot start still speaks the protocol: its instructions
// and every tool call say why, with the error's code and message; stdout
// carries nothing else, and the exit status is the error's.
func TestMCPStartupErrors(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	// bd v1.3's default workspace, embedded Dolt, which this build (without
	// the engine) refuses before it looks at the database's files.
	embedded := t.TempDir()
	assert.NilError(t, os.MkdirAll(filepath.Join(embedded, ".beads", "embeddeddolt", "em"), 0o755))
	assert.NilError(t, os.WriteFile(filepath.Join(embedded, ".beads", "metadata.json"), []byte(`{"backend":"dolt","dolt_mode":"embedded","dolt_database":"em"}`), 0o644))
	for _, tc := range []struct {
		name string
		dir  string
		args []string
		code claim.Code
		msg  string
		exit int
	}{
		{"no workspace", t.TempDir(), []string{"--agent", "a"}, claim.EWorkspace, "no .beads", 5},
		{"embedded Dolt in the default build", embedded, []string{"--agent", "a"}, claim.ESchema, "embedded", 6},
		{"no agent", root, nil, claim.EInvalid, "agent name is empty", 2},
		{"blank agent", root, []string{"--agent", " ", "--unique"}, claim.EInvalid, `agent name " " is blank`, 2},
		{"bad flag", root, []string{"--agent", "a", "--lease", "soon"}, claim.EInvalid, `--lease: "soon" is not a duration`, 2},
		{"unknown flag", root, []string{"--agent", "a", "--json"}, claim.EInvalid, "unknown flag: --json", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum := claimtest.FileSum(t, claimtest.DBPath(root))
			msgs, stderr, exit := piped(t, tc.dir, nil, []string{initialize, initialized,
				`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, toolCall(3, "claim", `{}`), toolCall(4, "stats", `{}`)}, tc.args...)
			assert.Equal(t, exit, tc.exit, stderr)
			assert.Assert(t, is.Contains(byID(t, msgs, "1").Result.Instructions, "bd-claim could not start: "+string(tc.code)))
			assert.Assert(t, is.Contains(byID(t, msgs, "1").Result.Instructions, tc.msg))
			assert.Assert(t, byID(t, msgs, "2").Result != nil)
			for _, id := range []string{"3", "4"} {
				res := byID(t, msgs, id).Result
				assert.Assert(t, res.IsError)
				assert.Equal(t, res.StructuredContent.Error.Code, tc.code)
				assert.Assert(t, is.Contains(res.StructuredContent.Error.Message, tc.msg))
			}
			assert.Assert(t, is.Contains(stderr, `"code":"`+string(tc.code)+`"`))
			assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum)
		})
	}
}

// A database that is busy when the server starts does not stop it, as a
// reason that goes away by itself: its calls say SQLITE_BUSY (retry) while
// another connection holds the database, and work once it is free. Each
// try finds the workspace again.
func TestMCPBusyAtStartup(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	assert.NilError(t, os.Mkdir(filepath.Join(root, ".git"), 0o755)) // the walk for .beads stops here
	ctx := context.Background()
	db := claimtest.Open(t, claimtest.DBPath(root))
	hold, err := db.Conn(ctx)
	assert.NilError(t, err)
	for _, stmt := range []string{"PRAGMA locking_mode = EXCLUSIVE", "BEGIN EXCLUSIVE"} { // no reader gets in
		_, err = hold.ExecContext(ctx, stmt)
		assert.NilError(t, err)
	}
	s := serve(t, root, "patient", "--timeout-ms", "100")
	text, isErr := s.call(t, "stats", map[string]any{})
	assert.Assert(t, isErr && strings.Contains(text, `"code":"SQLITE_BUSY"`), text)
	beads := filepath.Join(root, ".beads")
	assert.NilError(t, os.Rename(beads, beads+".away"))
	text, isErr = s.call(t, "stats", map[string]any{})
	assert.Assert(t, isErr && strings.Contains(text, `"code":"WORKSPACE_NOT_FOUND"`), text)
	assert.NilError(t, os.Rename(beads+".away", beads))
	_, err = hold.ExecContext(ctx, "COMMIT")
	assert.NilError(t, err)
	assert.NilError(t, hold.Close())
	assert.NilError(t, db.Close()) // the exclusive lock goes with the connection
	assert.Equal(t, s.callOK(t, "stats", map[string]any{}).Status, "ok")
	got := s.callOK(t, "claim", map[string]any{})
	assert.Equal(t, got.Issue.Assignee, "patient")
	assert.NilError(t, s.Close())
	assert.Assert(t, is.Contains(s.stderr.String(), `"msg":"mcp_serving"`))
}

// A server whose stdout cannot be written (a full disk) stops, and says
// why: the write's error.
func TestMCPStoppedByWriteError(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full to write to: %v", err)
	}
	defer full.Close()
	cmd := exec.Command(binary, "mcp", "--agent", "a")
	cmd.Dir = claimtest.Fixture(t, "0.49.6")
	cmd.Env = baseEnv()
	cmd.Stdin = strings.NewReader(initialize + "\n" + initialized + "\n")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = full, &stderr
	assert.NilError(t, cmd.Run(), stderr.String())
	assert.Assert(t, is.Contains(stderr.String(), `"msg":"mcp_stopped","agent":"a","reason":"write /dev/stdout: no space left on device"`))
}

// The initialize reply gives the agent its instructions, and declares the
// tools only: no logging (the logs go to stderr), a list that never
// changes.
func TestMCPInitialize(t *testing.T) {
	t.Parallel()
	s := serve(t, claimtest.Fixture(t, "0.49.6"), "init-agent", "--quiet")
	ir := s.InitializeResult()
	for _, want := range []string{`you are agent "init-agent"`, "claim_id", "close", "release", "wait", "reason", "SQLITE_BUSY", "BUSY or DB_UNAVAILABLE", "ALREADY_CLAIMED"} {
		assert.Assert(t, is.Contains(ir.Instructions, want))
	}
	b, err := json.Marshal(ir.Capabilities)
	assert.NilError(t, err)
	assert.Equal(t, string(b), `{"tools":{}}`)
	assert.Assert(t, ir.ServerInfo.Version != "")
}

// A wait whose call carries a progressToken is told every 5s that it goes
// on, from its start; one without is not.
func TestMCPProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the progress test waits 6s")
	}
	t.Parallel()
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	cmd := exec.Command(binary, "mcp", "--agent", "waiter", "--log-level", "debug")
	cmd.Dir = claimtest.Fixture(t, "0.49.6")
	cmd.Env = baseEnv()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "progress", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		},
	})
	session, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	assert.NilError(t, err)
	defer session.Close()
	defer func() {
		if t.Failed() {
			t.Log(stderr.String())
		}
	}()
	call := func(wait string, token any) result {
		params := &mcp.CallToolParams{Name: "claim", Arguments: map[string]any{"labels": []string{"no-such-label"}, "wait": wait}}
		if token != nil {
			params.SetProgressToken(token)
		}
		res, err := session.CallTool(context.Background(), params)
		assert.NilError(t, err)
		var out result
		b, _ := json.Marshal(res.StructuredContent)
		assert.NilError(t, json.Unmarshal(b, &out))
		return out
	}
	start := time.Now()
	out := call("6s", "tok-1")
	assert.Assert(t, out.Issue == nil)
	assert.Equal(t, out.Reason, "nothing became claimable within 6s")
	assert.Assert(t, time.Since(start) >= 6*time.Second)
	mu.Lock()
	first := len(got)
	assert.Assert(t, first == 2, "%d notifications, at 0s and 5s", first)
	for i, p := range got {
		assert.Equal(t, p.ProgressToken, "tok-1")
		assert.Equal(t, p.Total, 6.0)
		assert.Equal(t, p.Progress, float64(5*i))
		assert.Assert(t, is.Contains(p.Message, "waiting for a claimable issue"))
	}
	mu.Unlock()
	call("1s", nil)
	mu.Lock()
	assert.Equal(t, len(got), first, "progress without a token")
	mu.Unlock()
}

// A client that cancels a waiting call (notifications/cancelled) ends the
// wait, nothing written; the server logs it at INFO, not as an error, and
// goes on serving.
func TestMCPCancel(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	sum := claimtest.FileSum(t, claimtest.DBPath(root))
	s := serve(t, root, "canceller", "--log-level", "debug")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "claim", Arguments: map[string]any{"labels": []string{"no-such-label"}, "wait": "30s"}})
		done <- err
	}()
	waitForText(t, s.stderr, "issue_claim_waiting")
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	waitForText(t, s.stderr, `"code":"INTERRUPTED"`)
	assert.Equal(t, s.callOK(t, "stats", nil).Status, "ok")
	assert.NilError(t, s.Close())
	for _, l := range strings.Split(s.stderr.String(), "\n") {
		assert.Assert(t, !strings.Contains(l, `"level":"ERROR"`), l)
		if strings.Contains(l, "INTERRUPTED") {
			assert.Assert(t, is.Contains(l, `"level":"INFO"`))
		}
	}
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum, "database changed")

	// At --log-level warn, the record of the cancelled call, at INFO, is
	// not written at all.
	quiet := serve(t, root, "canceller-2", "--log-level", "warn")
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		_, err := quiet.CallTool(ctx, &mcp.CallToolParams{Name: "claim", Arguments: map[string]any{"labels": []string{"no-such-label"}, "wait": "30s"}})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	assert.NilError(t, quiet.Close())
	assert.Equal(t, quiet.stderr.String(), "")
}

// Two live servers never serve one agent name in one workspace: the second
// says so, with the fix, in its instructions and every call, and exits 2;
// the first serves on. With --unique, each session of one configuration has
// its own name, and they do not take each other's issues.
func TestMCPOneNamePerSession(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	a01 := claimtest.Cases(t, "0.49.6")["A01"].ID
	first := serve(t, root, "dup", "--quiet")
	held := first.callOK(t, "claim", map[string]any{"id": a01})

	second := serve(t, root, "dup")
	assert.Assert(t, is.Contains(second.InitializeResult().Instructions, "agent dup is served already"))
	text, isErr := second.call(t, "release", map[string]any{"id": a01})
	assert.Assert(t, isErr)
	var out result
	assert.NilError(t, json.Unmarshal([]byte(text), &out))
	assert.Equal(t, out.Error.Code, claim.EInvalid)
	assert.Assert(t, is.Contains(out.Error.Message, fmt.Sprintf("(pid %d)", first.cmd.Process.Pid)))
	assert.Assert(t, is.Contains(out.Error.Message, "add --unique"))
	assert.ErrorContains(t, second.Close(), "exit status 2")
	assert.Equal(t, first.callOK(t, "claim", map[string]any{"id": a01}).ClaimID, held.ClaimID) // still its own
	assert.NilError(t, first.Close())

	// Once the first has gone, the name is free again.
	again := serve(t, root, "dup", "--quiet")
	assert.Equal(t, again.callOK(t, "claim", map[string]any{"id": a01}).ClaimID, held.ClaimID)
	again.callOK(t, "release", map[string]any{"id": a01})

	// --unique: two sessions of one configuration, two names.
	u1, u2 := serve(t, root, "dup", "--unique", "--quiet"), serve(t, root, "dup", "--unique", "--quiet")
	got := u1.callOK(t, "claim", map[string]any{"id": a01})
	assert.Assert(t, regexp.MustCompile(`^dup-[0-9a-f]{8}$`).MatchString(got.Agent), got.Agent)
	assert.Assert(t, is.Contains(u1.InitializeResult().Instructions, fmt.Sprintf("you are agent %q", got.Agent)))
	text, isErr = u2.call(t, "claim", map[string]any{"id": a01})
	assert.Assert(t, isErr)
	assert.NilError(t, json.Unmarshal([]byte(text), &out))
	assert.Equal(t, out.Error.Code, claim.EAlready)
	assert.Equal(t, out.Error.Holder, got.Agent)
	assert.Assert(t, out.Agent != got.Agent && strings.HasPrefix(out.Agent, "dup-"))
}

// Without a usable runtime directory the check is passed over: the
// servers serve.
func TestMCPNameLockUnavailable(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	notDir := filepath.Join(t.TempDir(), "file")
	assert.NilError(t, os.WriteFile(notDir, nil, 0o600))
	for range 2 {
		msgs, stderr, exit := piped(t, root, []string{"XDG_RUNTIME_DIR=" + notDir}, []string{initialize, toolCall(2, "stats", `{}`)}, "--agent", "same")
		assert.Equal(t, exit, 0, stderr)
		assert.Assert(t, !byID(t, msgs, "2").Result.IsError)
	}
}

// bd-claim help mcp lists the flags that mean something there.
func TestMCPHelp(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), nil, "help", "mcp")
	assert.Equal(t, r.ExitCode, 0)
	assert.Assert(t, is.Contains(r.Stdout(), "--unique"))
	for _, flag := range []string{"--json", "--human", "--pretty"} {
		assert.Assert(t, !strings.Contains(r.Stdout(), flag), flag)
	}
}

// The command line caps values as the server does: a value longer than
// bd's columns is INVALID_ARGUMENT (exit 2), not echoed, nothing changed;
// one at the limit is taken. Enumerated values are read in any case.
func TestValueLengthCaps(t *testing.T) {
	t.Parallel()
	root := claimtest.Fixture(t, "0.49.6")
	sum := claimtest.FileSum(t, claimtest.DBPath(root))
	long := strings.Repeat("x", claim.MaxValueLen+1)
	for _, args := range [][]string{
		{"--id", long},
		{"--wait", strings.Repeat("9", 100000)},
		{"--label", "ok", "--label", long},
		{"--sort", long},
		{"release", "--id", long},
		{"heartbeat", "--id", "fx-1", "--lease", long},
	} {
		out, r := lc(t, root, nil, append(args, "--agent", "a")...)
		assert.Equal(t, r.ExitCode, 2, "%.40q: %s", args, r.Stdout())
		assert.Equal(t, out.Error.Code, claim.EInvalid)
		assert.Assert(t, is.Contains(out.Error.Message, "characters long; the limit is 255"))
		assert.Assert(t, len(r.Stdout()) < 500, "%d bytes: a value echoed", len(r.Stdout()))
	}
	assert.Equal(t, claimtest.FileSum(t, claimtest.DBPath(root)), sum)
	out, r := lc(t, root, nil, "--agent", "a", "--id", long[1:])
	assert.Equal(t, r.ExitCode, 7)
	assert.Equal(t, out.Error.Code, claim.ENotFound)
	out = lcOK(t, root, nil, "--agent", "a", "--dry-run", "--sort", "OLDEST", "--type", "Task", "--type", "BUG")
	assert.Equal(t, out.Filters.Sort, claim.SortOldest)
	assert.DeepEqual(t, out.Filters.Types, []string{"task", "bug"})
}
