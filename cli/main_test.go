package cli_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"gotest.tools/v3/icmd"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

// binary is bd-claim built with coverage (and -race unless the run is
// -short without -race); coverDir collects its counters
// (the directory `make test` passes as -test.gocoverdir, so the built
// binary's coverage joins the unit tests'). queueDir is the
// XDG_RUNTIME_DIR of the processes run starts: their writers' queues'
// lock files, which bd-claim never removes, go with the run's temp dir.
var binary, coverDir, queueDir string

func TestMain(m *testing.M) {
	flag.Parse()
	tmp, err := os.MkdirTemp("", "bd-claim-test-")
	if err != nil {
		panic(err)
	}
	coverDir = flag.Lookup("test.gocoverdir").Value.String()
	if coverDir == "" {
		coverDir = filepath.Join(tmp, "cover")
		_ = os.Mkdir(coverDir, 0o755)
	}
	binary = filepath.Join(tmp, "bd-claim")
	queueDir = filepath.Join(tmp, "run")
	_ = os.Mkdir(queueDir, 0o700)
	tags := "-tags=" + buildSetting("-tags") // the build of the tests' binary is this test binary's: the embedded one under make embedded-test
	pkgs, err := exec.Command("go", "list", tags, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", claimtest.Root()).Output()
	if err != nil {
		panic(err)
	}
	var own []string
	for _, p := range strings.Fields(string(pkgs)) {
		if strings.HasPrefix(p, "github.com/bdclaim/bd-claim") {
			own = append(own, p)
		}
	}
	args := []string{"build", tags, "-cover", "-covermode=atomic", "-coverpkg=" + strings.Join(own, ","), "-o", binary}
	if raceEnabled() {
		// A run without -race (go test -short, make embedded-test) builds
		// without: no race build of every dependency (SQLite, Dolt), and
		// the hundreds of processes the tests start run several times
		// faster.
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Dir = claimtest.Root()
	if out, err := build.CombinedOutput(); err != nil {
		panic(fmt.Sprintf("go build: %v\n%s", err, out))
	}
	code := claimtest.DoltMain(m) // m.Run(), then the package's dolt sql-server is stopped
	os.RemoveAll(tmp)
	os.Exit(code)
}

// raceEnabled says whether this test binary was built with -race.
func raceEnabled() bool { return buildSetting("-race") == "true" }

// buildSetting is a setting of this test binary's build ("" when unset).
func buildSetting(key string) string {
	info, _ := debug.ReadBuildInfo() // a test binary has it
	for _, s := range info.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// run runs the built bd-claim in dir with exactly the environment given
// (plus GOCOVERDIR), so the caller's BD_ACTOR, BEADS_DIR... never leak in.
func run(t *testing.T, dir string, env []string, args ...string) *icmd.Result {
	t.Helper()
	cmd := icmd.Command(binary, args...)
	return icmd.RunCmd(cmd, icmd.Dir(dir), icmd.WithEnv(append(baseEnv(), env...)...))
}

// baseEnv is the environment every bd-claim process of the tests starts
// from: coverage, UTC, no race-report delay, the run's queue directory
// (a later entry of the same variable overrides it).
func baseEnv() []string {
	return []string{"GOCOVERDIR=" + coverDir, "TZ=UTC", "GORACE=atexit_sleep_ms=0", "XDG_RUNTIME_DIR=" + queueDir}
}
