package main

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// A stream as go test -json writes it: a passing, a skipped (with its
// reason) and a failing subtest under a failing test, a build error, and the lines of a failing,
// a passing and a test-less package.
const stream = `{"Action":"build-output","ImportPath":"m/broken","Output":"# m/broken\n"}
{"Action":"run","Package":"m/a","Test":"TestA"}
{"Action":"output","Package":"m/a","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"run","Package":"m/a","Test":"TestA/ok"}
{"Action":"output","Package":"m/a","Test":"TestA/ok","Output":"quiet when passing\n"}
{"Action":"pass","Package":"m/a","Test":"TestA/ok"}
{"Action":"run","Package":"m/a","Test":"TestA/skipped"}
{"Action":"output","Package":"m/a","Test":"TestA/skipped","Output":"=== RUN   TestA/skipped\n"}
{"Action":"output","Package":"m/a","Test":"TestA/skipped","Output":"    a_test.go:5: needs dolt\n"}
{"Action":"output","Package":"m/a","Test":"TestA/skipped","Output":"    --- SKIP: TestA/skipped (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestA/skipped"}
{"Action":"output","Package":"m/a","Test":"TestA/bad","Output":"    a_test.go:9: want 1, got 2\n"}
{"Action":"fail","Package":"m/a","Test":"TestA/bad"}
{"Action":"output","Package":"m/a","Test":"TestA","Output":"--- FAIL: TestA (0.00s)\n"}
{"Action":"fail","Package":"m/a","Test":"TestA"}
{"Action":"output","Package":"m/a","Output":"FAIL\n"}
{"Action":"output","Package":"m/a","Output":"FAIL\tm/a\t0.01s\n"}
{"Action":"fail","Package":"m/a"}
{"Action":"output","Package":"m/b","Output":"coverage: 50.0% of statements\n"}
{"Action":"output","Package":"m/b","Output":"PASS\n"}
{"Action":"output","Package":"m/b","Output":"ok  \tm/b\t0.01s\tcoverage: 50.0% of statements\n"}
{"Action":"pass","Package":"m/b"}
{"Action":"output","Package":"m/c","Output":"?   \tm/c\t[no test files]\n"}
{"Action":"skip","Package":"m/c"}
not json
{"Action":"output","Package":"m/d","Output":"panic: test timed out\n"}
`

func TestRelay(t *testing.T) {
	var out strings.Builder
	c, err := relay(strings.NewReader(stream), &out)
	assert.NilError(t, err)
	assert.Equal(t, c, counts{passed: 1, failed: 2, skipped: 1})
	assert.Equal(t, c.String(), "tests: 1 passed, 2 failed, 1 skipped")
	assert.Equal(t, out.String(), "# m/broken\n"+
		"    a_test.go:5: needs dolt\n    --- SKIP: TestA/skipped (0.00s)\n"+
		"    a_test.go:9: want 1, got 2\n"+
		"=== RUN   TestA\n--- FAIL: TestA (0.00s)\n"+
		"FAIL\nFAIL\tm/a\t0.01s\n"+
		"ok  \tm/b\t0.01s\tcoverage: 50.0% of statements\n"+
		"?   \tm/c\t[no test files]\n"+
		"not json\n"+
		"panic: test timed out\n")
}

func TestTally(t *testing.T) {
	path := t.TempDir() + "/tally"
	assert.NilError(t, appendTally(path, counts{passed: 3, skipped: 1}))
	assert.NilError(t, appendTally(path, counts{passed: 2, failed: 1}))
	c, err := readTally(path)
	assert.NilError(t, err)
	assert.Equal(t, c, counts{passed: 5, failed: 1, skipped: 1})
}
