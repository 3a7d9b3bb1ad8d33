package claimtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/icmd"
)

// DoltBin and BdDoltBin are the real dolt 2.2.0 and bd v1.3.0 that the Dolt
// (server mode) tests drive, built by `make dolt` (scripts/build-dolt.sh).
func DoltBin() string   { return filepath.Join(Root(), ".bin", "dolt-2.2.0") }
func BdDoltBin() string { return filepath.Join(Root(), ".bin", "bd-v1.3.0") }

// DoltServer is a throwaway `dolt sql-server` on a free loopback port.
type DoltServer struct {
	Port    int
	Home    string // the server's HOME: dolt's global config (user.name/email)
	dir     string
	log     string
	cmd     *exec.Cmd
	done    chan struct{} // closed when the process has exited
	waitErr error         // cmd.Wait's, once done is closed
	seq     atomic.Int64  // makes every workspace's database name unique
	// inits is held shared by each bd init (Workspace) and alone by each
	// drop, so that no database is dropped while bd creates another. In
	// the first make test that dropped databases, one bd init failed in
	// its migrations ("pending ignored schema migrations alter
	// pre-existing dirty tables: events"), never seen in the runs before;
	// 24 inits beside drops, tried alone, did not fail, so the drop is
	// not proven the cause, and the two are kept apart.
	inits sync.RWMutex
}

// StartDolt starts a dolt sql-server whose HOME and data dir are under dir
// and returns once it accepts MySQL connections.
func StartDolt(dir string) (*DoltServer, error) {
	if _, err := os.Stat(DoltBin()); err != nil {
		return nil, fmt.Errorf("%w: run `make dolt`", err)
	}
	s := &DoltServer{Home: filepath.Join(dir, "home"), dir: filepath.Join(dir, "data"), log: filepath.Join(dir, "server.log")}
	for _, d := range []string{s.Home, s.dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// bd init makes Dolt commits, which need the server's identity; metrics
	// off so no test phones home.
	for _, kv := range [][2]string{{"user.name", "bd-test"}, {"user.email", "bd-test@example.invalid"}, {"metrics.disabled", "true"}} {
		c := exec.Command(DoltBin(), "config", "--global", "--add", kv[0], kv[1])
		c.Env = s.env()
		if out, err := c.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("dolt config %s: %v\n%s", kv[0], err, out)
		}
	}
	// The free port can be taken between probing and binding: then the
	// server exits, and another port is tried.
	var err error
	for range 3 {
		if err = s.start(); !errors.Is(err, errExited) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

var errExited = errors.New("dolt sql-server exited before accepting connections")

func (s *DoltServer) env() []string {
	return []string{"HOME=" + s.Home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
}

func (s *DoltServer) start() error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	s.cmd = exec.Command(DoltBin(), "sql-server", "--host", "127.0.0.1", "--port", strconv.Itoa(s.Port))
	s.cmd.Dir, s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = s.dir, s.env(), logf, logf
	s.cmd.SysProcAttr = doltProcAttr()
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.done = make(chan struct{})
	go func() { s.waitErr = s.cmd.Wait(); close(s.done) }()

	conn, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		s.Stop()
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = conn.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(s.log)
			return fmt.Errorf("%w (port %d, %v):\n%s", errExited, s.Port, s.waitErr, log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("dolt sql-server on port %d: no connection within 60 s: %v (log: %s)", s.Port, err, s.log)
		}
	}
}

// Stop stops the server (SIGTERM to its pid, SIGKILL after 10 s) and waits
// for it to exit.
func (s *DoltServer) Stop() error {
	select {
	case <-s.done:
		return nil // already gone
	default:
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("dolt sql-server (pid %d) ignored SIGTERM for 10 s: killed", s.cmd.Process.Pid)
	}
	var exit *exec.ExitError
	if errors.As(s.waitErr, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM {
		return nil
	}
	return s.waitErr
}

// DSN is a go-sql-driver/mysql DSN for one database on the server ("" for
// none), with the options bd itself uses (parseTime, interpolateParams).
func (s *DoltServer) DSN(database string) string {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Net, cfg.Addr, cfg.DBName = "root", "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), database
	cfg.ParseTime, cfg.InterpolateParams = true, true
	cfg.Timeout = 5 * time.Second
	return cfg.FormatDSN()
}

// The package's server, started by the first NeedDolt and stopped by
// DoltMain: one per test binary.
var pkgDolt struct {
	main bool // DoltMain is running the tests
	once sync.Once
	dir  string
	srv  *DoltServer
	err  error
}

const needDolt = "needs dolt sql-server: run `make dolt`; skipped under -short"

// NeedDolt returns the package's dolt sql-server, starting it on first use.
// It skips the test under -short and fails it when the binaries are
// missing. The package's TestMain must run the tests through DoltMain:
//
//	func TestMain(m *testing.M) { os.Exit(claimtest.DoltMain(m)) }
func NeedDolt(t testing.TB) *DoltServer {
	t.Helper()
	if testing.Short() {
		t.Skip(needDolt)
	}
	if !pkgDolt.main {
		t.Fatal("claimtest.NeedDolt: the package's TestMain must run the tests with claimtest.DoltMain(m), which stops the server")
	}
	for _, bin := range []string{DoltBin(), BdDoltBin()} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%v: the Dolt tests need bd v1.3.0 and dolt 2.2.0: run `make dolt`", err)
		}
	}
	pkgDolt.once.Do(func() {
		if pkgDolt.dir, pkgDolt.err = os.MkdirTemp("", "bd-claim-dolt-"); pkgDolt.err == nil {
			pkgDolt.srv, pkgDolt.err = StartDolt(pkgDolt.dir)
		}
	})
	if pkgDolt.err != nil {
		t.Fatalf("dolt sql-server: %v", pkgDolt.err)
	}
	return pkgDolt.srv
}

// DoltMain runs the tests (m.Run) and then stops the server NeedDolt may have
// started and removes its files; it returns the exit code for os.Exit.
func DoltMain(m *testing.M) int {
	pkgDolt.main = true
	code := m.Run()
	if pkgDolt.srv != nil {
		if err := pkgDolt.srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "claimtest: stopping dolt sql-server:", err)
			code = max(code, 1)
		}
	}
	if pkgDolt.dir != "" {
		os.RemoveAll(pkgDolt.dir)
	}
	return code
}

// DoltWorkspace is a git repository with a server-mode .beads/ made by the
// real `bd init --server` against one new database on a DoltServer.
type DoltWorkspace struct {
	BdRunner // bd v1.3.0 in the workspace
	Server   *DoltServer
	Prefix   string // the issue prefix; ids are Prefix-xxx
	Database string // the database on Server
}

// Workspace makes a new workspace whose prefix is prefix plus a number unique
// on this server (bd names the database after the prefix). bd runs as actor
// bd-test unless told otherwise (As).
func (s *DoltServer) Workspace(t testing.TB, prefix string) *DoltWorkspace {
	t.Helper()
	prefix += strconv.FormatInt(s.seq.Add(1), 10)
	home := t.TempDir()
	gitconfig := "[user]\n\tname = bd-test\n\temail = bd-test@example.invalid\n[init]\n\tdefaultBranch = main\n"
	assert.NilError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644))
	w := &DoltWorkspace{Server: s, Prefix: prefix, Database: strings.ReplaceAll(prefix, "-", "_"), BdRunner: BdRunner{t: t, bin: BdDoltBin(), actorVar: "BEADS_ACTOR", Dir: t.TempDir(), Env: []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"), // for git
		"TZ=UTC",
		"BEADS_ACTOR=bd-test",
		"BD_DISABLE_METRICS=1", "DO_NOT_TRACK=1",
		"BD_NO_PAGER=1", "NO_COLOR=1",
		"GIT_CONFIG_NOSYSTEM=1",
	}}}
	icmd.RunCmd(icmd.Command("git", "init", "-q"), icmd.Dir(w.Dir), icmd.WithEnv(w.Env...)).Assert(t, icmd.Success)
	s.inits.RLock()
	defer s.inits.RUnlock()
	w.OK("init", "--server", "--server-host", "127.0.0.1", "--server-port", strconv.Itoa(s.Port), "--server-user", "root",
		"--prefix", prefix, "--non-interactive", "--skip-hooks", "--skip-agents", "--quiet")
	t.Cleanup(func() { assert.Check(t, s.drop(w.Database)) })
	// bd init --server records the port only in metadata.json, which bd then
	// warns is deprecated on every command; the port file silences that.
	assert.NilError(t, os.WriteFile(filepath.Join(w.Dir, ".beads", "dolt-server.port"), []byte(strconv.Itoa(s.Port)), 0o644))
	return w
}

// drop removes a workspace's database from the server when its test ends.
// The server is the package's, and bd reads INFORMATION_SCHEMA at every
// start, which on Dolt reads every database on the server: as a package's
// tests left their databases behind, each bd init, and so each test, got
// slower (bd init took 7 s beside one database, 17 s beside 10, 38 s
// beside 20, 68 s beside 33).
func (s *DoltServer) drop(database string) error {
	s.inits.Lock()
	defer s.inits.Unlock()
	conn, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Exec("DROP DATABASE IF EXISTS `" + database + "`")
	return err
}

// As is the same workspace with bd acting as another actor (BEADS_ACTOR).
func (w *DoltWorkspace) As(actor string) *DoltWorkspace {
	c := *w
	c.BdRunner = w.as(actor)
	return &c
}

// DB connects to the workspace's database, as bd does (go-sql-driver/mysql,
// parseTime, interpolateParams), for inspecting rows; closed at the end of t.
func (w *DoltWorkspace) DB(t testing.TB) *sql.DB {
	t.Helper()
	conn, err := sql.Open("mysql", w.Server.DSN(w.Database))
	assert.NilError(t, err)
	t.Cleanup(func() { conn.Close() })
	assert.NilError(t, conn.Ping())
	return conn
}
