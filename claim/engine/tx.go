package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Retry bounds how often a write transaction is tried again after it found
// the database busy.
type Retry struct {
	Attempts int           // total tries, at least 1
	Backoff  time.Duration // pause after the first busy try (at least 1ms); doubled each time up to 1s, with ±50% jitter
}

// Beginner begins transactions: a pool (*sql.DB) or one of its
// connections (*sql.Conn).
type Beginner interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// WithTx runs fn in one transaction on conn and commits it: any error rolls
// everything back, so fn's writes land together or not at all. The whole
// transaction is tried again, after an exponential, jittered pause, while
// retryable says its error is worth another try (a busy SQLite, a Dolt
// serialization failure), up to r.Attempts tries.
func WithTx(ctx context.Context, conn Beginner, r Retry, retryable func(error) bool, fn func(*sql.Tx) error) error {
	pause := max(r.Backoff, time.Millisecond)
	for try := 1; ; try++ {
		err := tx(ctx, conn, fn)
		if !retryable(err) || try >= r.Attempts {
			return err
		}
		t := time.NewTimer(pause/2 + rand.N(pause+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}

// ErrCommit is in the chain of a COMMIT's error (WithTx's, or an engine's
// own commit of its transaction), whose message starts "commit: ": where
// the connection broke, the transaction may or may not have landed.
var ErrCommit = errors.New("commit")

// tx is one try: begin, fn, commit. Begin and commit errors say which they
// were (the driver's error stays wrapped; a commit's is an ErrCommit); an
// error from fn, or a panic, rolls back.
func tx(ctx context.Context, conn Beginner, fn func(*sql.Tx) error) (err error) {
	t, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = t.Rollback()
			panic(p)
		}
	}()
	if err := fn(t); err != nil {
		_ = t.Rollback()
		return err
	}
	if err := t.Commit(); err != nil {
		return fmt.Errorf("%w: %w", ErrCommit, err)
	}
	return nil
}
