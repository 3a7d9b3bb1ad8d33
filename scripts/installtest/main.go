// Command installtest tests install.sh against a release served from a
// dist/ that make dist made: for each build of this machine's OS and
// architecture it serves dist/ on 127.0.0.1, installs with install.sh into
// a temporary directory, and runs what it installed: bd-claim version
// (the build's name), bd-claim demo (racing agents drain a generated
// workspace), a claim on a real workspace made by bd v0.49.6 (the fixture),
// and, given bd v1.3.0 (-bd), on an embedded Dolt workspace that bd init
// makes: claimed by the embedded build, refused by the default one. A
// served archive whose bytes differ from checksums.txt must be refused,
// with nothing installed.
//
//	go run ./scripts/installtest [-builds default,embedded] [-bd .bin/bd-v1.3.0] dist
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	builds := flag.String("builds", "default,embedded", "the builds to install")
	bd := flag.String("bd", "", "bd v1.3.0, to make an embedded Dolt workspace (none: that part is not run)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: installtest [-builds default,embedded] [-bd BD] DIST")
		os.Exit(2)
	}
	dist, err := filepath.Abs(flag.Arg(0))
	if err == nil && *bd != "" {
		*bd, err = filepath.Abs(*bd)
	}
	if err == nil {
		err = run(dist, strings.Split(*builds, ","), *bd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "installtest: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("installtest: PASS")
}

func run(dist string, builds []string, bd string) error {
	tmp, err := os.MkdirTemp("", "bd-claim-installtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	url, stop, err := serve(dist)
	if err != nil {
		return err
	}
	defer stop()
	var embeddedWS string
	if bd != "" {
		if embeddedWS, err = embeddedWorkspace(bd, filepath.Join(tmp, "embedded")); err != nil {
			return fmt.Errorf("bd init: %w", err)
		}
	}
	for _, build := range builds {
		if err := install(url, build, filepath.Join(tmp, build), embeddedWS, bd); err != nil {
			return fmt.Errorf("%s build: %w", build, err)
		}
	}
	return tampered(dist, builds[0], filepath.Join(tmp, "tampered"))
}

// serve serves dir on 127.0.0.1 (never beyond this machine) until stop.
func serve(dir string) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	return "http://" + l.Addr().String(), func() { srv.Close() }, nil
}

// installSh runs install.sh with HOME in dir and a PATH without the
// install directory, and returns its stderr.
func installSh(url, build, dir string) (string, error) {
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("sh", "install.sh", "--base-url", url, "--build", build, "--dir", filepath.Join(dir, "bin"))
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	return stderr.String(), err
}

// install installs one build with install.sh and runs it.
func install(url, build, dir, embeddedWS, bd string) error {
	log, err := installSh(url, build, dir)
	fmt.Print(log)
	if err != nil {
		return fmt.Errorf("install.sh: %w", err)
	}
	bin := filepath.Join(dir, "bin", "bd-claim")
	if !strings.Contains(log, "is not on your PATH") {
		return errors.New("install.sh did not say that the install directory is not on PATH")
	}
	env := []string{"HOME=" + filepath.Join(dir, "home"), "PATH=/usr/local/bin:/usr/bin:/bin", "TZ=UTC", "XDG_RUNTIME_DIR=" + dir}

	name := map[string]string{"default": "(default build: SQLite and Dolt server/proxied; no embedded Dolt)", "embedded": "(embedded build)"}[build]
	out, err := command(dir, env, bin, "version")
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), name) {
		return fmt.Errorf("bd-claim version: %q, %v", out, err)
	}
	fmt.Print(out)

	// Racing agents drain a generated workspace.
	out, err = command(dir, env, bin, "demo", "--agents", "4", "--issues", "24")
	if err != nil || !strings.Contains(out, "verdict: PASS") {
		return fmt.Errorf("bd-claim demo: %v\n%s", err, out)
	}
	fmt.Println(lastLine(out))

	// A workspace made by the real bd v0.49.6 (SQLite).
	ws := filepath.Join(dir, "sqlite")
	if err := os.MkdirAll(filepath.Join(ws, ".beads"), 0o755); err != nil {
		return err
	}
	for _, f := range []string{"beads.db", "metadata.json", "config.yaml"} {
		if err := copyFile(filepath.Join("testdata", "fixtures", "bd-v0.49.6", f), filepath.Join(ws, ".beads", f)); err != nil {
			return err
		}
	}
	if _, err := claims(ws, env, bin, "SQLite workspace of bd v0.49.6"); err != nil {
		return err
	}

	if embeddedWS == "" {
		return nil
	}
	if build == "default" {
		out, err := command(embeddedWS, env, bin, "--agent", "install-test", "--quiet")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 6 || !strings.Contains(out, `"SCHEMA_INCOMPATIBLE"`) {
			return fmt.Errorf("the default build on an embedded workspace: %v %s", err, out)
		}
		fmt.Println("embedded Dolt workspace of bd v1.3.0: refused by the default build (exit 6)")
		return nil
	}
	id, err := claims(embeddedWS, env, bin, "embedded Dolt workspace of bd v1.3.0")
	if err != nil {
		return err
	}
	// bd sees the claim.
	out, err = command(embeddedWS, bdEnv(filepath.Dir(embeddedWS)), bd, "list", "--status", "in_progress", "--json")
	var listed []struct{ ID, Status, Assignee string }
	if err != nil || json.Unmarshal([]byte(out), &listed) != nil || len(listed) != 1 || listed[0].ID != id || listed[0].Assignee != "install-test" {
		return fmt.Errorf("bd list --status in_progress after the claim of %s: %v %s", id, err, out)
	}
	fmt.Printf("bd list: %s in_progress, assignee install-test\n", id)
	return nil
}

// claims claims an issue for agent install-test in the workspace ws,
// checks the answer and returns the issue's id.
func claims(ws string, env []string, bin, what string) (string, error) {
	out, err := command(ws, env, bin, "--agent", "install-test", "--quiet")
	var r struct {
		Status string `json:"status"`
		Issue  *struct {
			ID, Status, Assignee string
		} `json:"issue"`
	}
	if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.Status != "ok" || r.Issue == nil ||
		r.Issue.Status != "in_progress" || r.Issue.Assignee != "install-test" {
		return "", fmt.Errorf("a claim on a %s: %v %s", what, err, out)
	}
	fmt.Printf("%s: claimed %s\n", what, r.Issue.ID)
	return r.Issue.ID, nil
}

// tampered serves a copy of dist whose archive of build for this machine
// has one byte changed: install.sh must refuse it and install nothing.
func tampered(dist, build, dir string) error {
	served := filepath.Join(dir, "served")
	if err := os.MkdirAll(served, 0o755); err != nil {
		return err
	}
	sums, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(served, "checksums.txt"), sums, 0o644); err != nil {
		return err
	}
	suffix := "_" + runtime.GOOS + "_" + runtime.GOARCH + "_" + build + ".tar.gz"
	var archive string
	for s := bufio.NewScanner(bytes.NewReader(sums)); s.Scan(); {
		if _, name, _ := strings.Cut(s.Text(), "  "); strings.HasSuffix(name, suffix) {
			archive = name
		}
	}
	data, err := os.ReadFile(filepath.Join(dist, archive))
	if err != nil {
		return err
	}
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(filepath.Join(served, archive), data, 0o644); err != nil {
		return err
	}
	url, stop, err := serve(served)
	if err != nil {
		return err
	}
	defer stop()
	log, err := installSh(url, build, dir)
	if err == nil || !strings.Contains(log, "sha256") {
		return fmt.Errorf("install.sh took a tampered %s: %v\n%s", archive, err, log)
	}
	if _, err := os.Stat(filepath.Join(dir, "bin", "bd-claim")); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("install.sh refused a tampered archive but installed bd-claim: %v", err)
	}
	fmt.Print("a tampered archive: ", log)
	return nil
}

// embeddedWorkspace makes a git repository with bd v1.3.0's default
// workspace (embedded Dolt) and three open issues; it returns the
// repository.
func embeddedWorkspace(bd, dir string) (string, error) {
	ws := filepath.Join(dir, "repo")
	home := filepath.Join(dir, "home")
	for _, d := range []string{ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	gitconfig := "[user]\n\tname = bd-test\n\temail = bd-test@example.invalid\n[init]\n\tdefaultBranch = main\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		return "", err
	}
	env := bdEnv(dir)
	if _, err := command(ws, env, "git", "init", "-q"); err != nil {
		return "", err
	}
	if out, err := command(ws, env, bd, "init", "--prefix", "it", "--non-interactive", "--skip-hooks", "--skip-agents", "--quiet"); err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	for _, title := range []string{"First", "Second", "Third"} {
		if out, err := command(ws, env, bd, "create", title, "-p", "1", "--json"); err != nil {
			return "", fmt.Errorf("bd create: %w: %s", err, out)
		}
	}
	return ws, nil
}

// bdEnv is bd's whole environment, with HOME in dir.
func bdEnv(dir string) []string {
	return []string{"HOME=" + filepath.Join(dir, "home"), "PATH=" + os.Getenv("PATH"), "TZ=UTC", "BEADS_ACTOR=bd-test",
		"BD_DISABLE_METRICS=1", "DO_NOT_TRACK=1", "DOLT_METRICS_DISABLED=1", "BD_NO_PAGER=1", "NO_COLOR=1", "GIT_CONFIG_NOSYSTEM=1"}
}

// command runs name in dir with exactly env and returns its stdout (with
// its stderr when it fails).
func command(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out) + stderr.String(), err
	}
	return string(out), nil
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o644)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
