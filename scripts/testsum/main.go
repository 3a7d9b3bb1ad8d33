// Command testsum runs go test -json with the given arguments and prints what
// a plain go test prints (each package's closing line, and the output of each
// failing test), and what each skipped test said (so that a skip is seen,
// and why), then one closing line that counts the tests:
//
//	tests: 412 passed, 0 failed, 3 skipped
//
// Subtests count as tests. It exits with go test's status, and with 1 when
// go test passed without running a single test, so that a filter matching
// nothing cannot pass for a green run. -tally FILE appends the counts to FILE;
// testsum -total FILE prints the closing line of every run appended there.
//
//	go run ./scripts/testsum [-tally FILE] -- [go test flags] [packages] [-args ...]
//	go run ./scripts/testsum -total FILE
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// counts are the tests a run passed, failed and skipped.
type counts struct{ passed, failed, skipped int }

func (c counts) String() string {
	return fmt.Sprintf("tests: %d passed, %d failed, %d skipped", c.passed, c.failed, c.skipped)
}

func main() {
	tally := flag.String("tally", "", "append this run's counts to `FILE`")
	total := flag.String("total", "", "print the counts of every run appended to `FILE`, and run nothing")
	flag.Parse()
	if *total != "" {
		c, err := readTally(*total)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(2)
		}
		fmt.Println(c)
		if c.failed > 0 || c.passed == 0 {
			os.Exit(1)
		}
		return
	}
	os.Exit(run(flag.Args(), *tally, os.Stdout))
}

// run runs go test -json args, relays it to out and returns the exit status.
func run(args []string, tally string, out io.Writer) int {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		return 2
	}
	c, readErr := relay(stdout, out)
	status := 0
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			return 2
		}
		status = exit.ExitCode()
	}
	if readErr != nil {
		fmt.Fprintln(os.Stderr, "testsum: reading go test -json:", readErr)
		return 2
	}
	fmt.Fprintln(out, c)
	if tally != "" {
		if err := appendTally(tally, c); err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			return 2
		}
	}
	if status == 0 && c.passed+c.failed == 0 {
		fmt.Fprintln(out, "testsum: go test ran no test")
		return 1
	}
	return status
}

// relay prints what a plain go test prints and counts the tests: of a
// package that passes, its closing line; of one that fails, all it printed
// outside its tests; of a test, what it printed, if it fails; and of a
// skipped test, its reason and its "--- SKIP" line.
func relay(r io.Reader, out io.Writer) (counts, error) {
	var c counts
	held := map[string][]string{} // a running test's or package's output, printed if it fails
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "output":
			held[key] = append(held[key], e.Output)
		case "fail":
			if e.Test != "" {
				c.failed++
			}
			fmt.Fprint(out, strings.Join(held[key], ""))
			delete(held, key)
		case "pass", "skip":
			switch {
			case e.Test == "": // a package: its closing line ("ok  ...", "?   ...")
				for _, l := range held[key] {
					if strings.HasPrefix(l, "ok  ") || strings.HasPrefix(l, "?   ") {
						fmt.Fprint(out, l)
					}
				}
			case e.Action == "pass":
				c.passed++
			default:
				c.skipped++
				for _, l := range held[key] {
					if !strings.HasPrefix(strings.TrimSpace(l), "=== ") {
						fmt.Fprint(out, l)
					}
				}
			}
			delete(held, key)
		}
	}
	// A package or test that never ended (go test was killed) shows what
	// it printed.
	for _, key := range slices.Sorted(maps.Keys(held)) {
		fmt.Fprint(out, strings.Join(held[key], ""))
	}
	return c, sc.Err()
}

func appendTally(path string, c counts) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%d %d %d\n", c.passed, c.failed, c.skipped); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readTally(path string) (counts, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return counts{}, err
	}
	var sum counts
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c counts
		if _, err := fmt.Sscanf(line, "%d %d %d", &c.passed, &c.failed, &c.skipped); err != nil {
			return counts{}, fmt.Errorf("%s:%d: %q is not three counts", path, i+1, line)
		}
		sum.passed += c.passed
		sum.failed += c.failed
		sum.skipped += c.skipped
	}
	return sum, nil
}
