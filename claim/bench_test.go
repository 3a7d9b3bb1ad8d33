package claim_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/sqlite"
)

// The benchmarks of the hot paths. Compare their ns/op:
//
//	go test -bench . -run '^$' ./claim
//
// BenchmarkRawClaimLoop is the floor that BenchmarkClaim is measured
// against: one UPDATE per BEGIN IMMEDIATE transaction, same file, same
// pragmas (sqlite.Open). scripts/bench (make bench) measures the CLI.

// benchIssues is the size of the benchmark workspace: small enough to
// generate in a blink, big enough that refills are rare.
const benchIssues = 2000

// benchDemo generates a workspace for one benchmark, outside the timer.
func benchDemo(b *testing.B) sqlite.Demo {
	b.Helper()
	d, err := sqlite.CreateDemo(context.Background(), b.TempDir(), benchIssues, 1)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func benchStore(b *testing.B, d sqlite.Demo) *claim.Store {
	b.Helper()
	s, err := engines.Open(context.Background(), claim.Workspace{DBPath: d.Path}, claim.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// benchRefill makes every issue the benchmark claimed open again, and drops
// the claims' events and dirty marks (content hashes stay stale: harmless
// here).
func benchRefill(b *testing.B, path, agent string) {
	b.Helper()
	conn := sqlite.OpenDB(path, 5*time.Second)
	defer conn.Close()
	for _, stmt := range []string{
		"UPDATE issues SET status = 'open', assignee = '' WHERE status = 'in_progress' AND assignee LIKE ?",
		"DELETE FROM events WHERE actor LIKE ?",
		"DELETE FROM dirty_issues",
	} {
		args := []any{agent}
		if stmt == "DELETE FROM dirty_issues" {
			args = nil
		}
		if _, err := conn.Exec(stmt, args...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaim is library mode: one Store, one claim per op.
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	d := benchDemo(b)
	s := benchStore(b, d)
	left := len(d.Ready)
	b.ResetTimer()
	for range b.N {
		if left == 0 {
			b.StopTimer()
			benchRefill(b, d.Path, "bench")
			left = len(d.Ready)
			b.StartTimer()
		}
		iss, err := issueOf(s.Claim(ctx, claim.Request{Agent: "bench"}))
		if err != nil || iss == nil {
			b.Fatalf("claim %d: %v, %v", left, iss, err)
		}
		left--
	}
}

// BenchmarkClaimParallel is library mode with 8 agents claiming at once
// (an orchestrator's process): 8 goroutines sharing one Store, and 8
// Stores on one workspace, one claim per op.
func BenchmarkClaimParallel(b *testing.B) {
	const agents = 8
	for _, stores := range []int{1, agents} {
		b.Run(fmt.Sprintf("stores=%d", stores), func(b *testing.B) {
			ctx := context.Background()
			d := benchDemo(b)
			ss := make([]*claim.Store, stores)
			for i := range ss {
				ss[i] = benchStore(b, d)
			}
			b.ResetTimer()
			for todo := b.N; todo > 0; {
				n := min(todo, len(d.Ready))
				todo -= n
				var wg sync.WaitGroup
				errs := make(chan error, agents)
				for a := range agents {
					wg.Go(func() {
						for range n/agents + min(1, max(0, n%agents-a)) {
							iss, err := issueOf(ss[a%stores].Claim(ctx, claim.Request{Agent: fmt.Sprintf("bench-%d", a)}))
							if err == nil && iss == nil {
								err = fmt.Errorf("agent %d found nothing", a)
							}
							if err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				benchRefill(b, d.Path, "bench%")
				b.StartTimer()
			}
		})
	}
}

// BenchmarkClaimDryRun finds the next issue without writing.
func BenchmarkClaimDryRun(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b, benchDemo(b))
	b.ResetTimer()
	for range b.N {
		iss, err := issueOf(s.Claim(ctx, claim.Request{Agent: "bench", DryRun: true}))
		if err != nil || iss == nil {
			b.Fatalf("dry run: %v, %v", iss, err)
		}
	}
}

// BenchmarkOpen is what every CLI claim pays before it claims: Open (the
// connection and the schema checks) and Close.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	d := benchDemo(b)
	b.ResetTimer()
	for range b.N {
		s, err := engines.Open(ctx, claim.Workspace{DBPath: d.Path}, claim.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawClaimLoop is the limit a claim can approach: BEGIN IMMEDIATE;
// UPDATE one row; COMMIT, through sqlite.Open so the pragmas are bd-claim's.
func BenchmarkRawClaimLoop(b *testing.B) {
	ctx := context.Background()
	d := benchDemo(b)
	conn := sqlite.OpenDB(d.Path, 5*time.Second)
	b.Cleanup(func() { conn.Close() })
	if err := conn.PingContext(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock=immediate)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE issues SET status = 'in_progress', assignee = ? WHERE id = ?",
			"bench", d.Ready[i%len(d.Ready)]); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimEventsTable shows that the failure policy's lookups (backoff,
// abandonment, leases) do not grow with the events table: the same claim
// query with an empty events table and with a million events of other
// issues. Compare the two ns/op.
func BenchmarkClaimEventsTable(b *testing.B) {
	for _, n := range []int{0, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			ctx := context.Background()
			d := benchDemo(b)
			conn, err := sql.Open("sqlite", "file:"+d.Path) // no foreign keys: the events name issues bd deleted long ago
			if err != nil {
				b.Fatal(err)
			}
			tx, _ := conn.Begin()
			for i := range n {
				comment := []string{"", "bd-claim failed: flaky", "bd-claim reset: cleared 1 failed attempts", "bd-claim lease until 2026-01-01T00:00:00Z (1m0s)"}[i%4]
				event := []string{"created", "status_changed", "commented", "claimed"}[i%4]
				if _, err := tx.Exec("INSERT INTO events (issue_id, event_type, actor, comment) VALUES (?, ?, 'old', NULLIF(?, ''))",
					fmt.Sprintf("gone-%d", i/50), event, comment); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			conn.Close()
			s := benchStore(b, d)
			b.ResetTimer()
			for range b.N {
				res, err := s.Claim(ctx, claim.Request{Agent: "bench", DryRun: true})
				if err != nil || res.Issue == nil {
					b.Fatal(err, res.Reason)
				}
			}
		})
	}
}
