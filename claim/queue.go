package claim

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/bdclaim/bd-claim/db"
)

// queueTTL bounds how long a remembered claim order is trusted: readiness
// can also change with the clock alone (a defer_until passing, the 48h
// boundary of the hybrid order), which no write announces.
const queueTTL = time.Second

// queue remembers the claim order between claims of one Store. Sorting the
// candidates costs time in proportion to the open issues of the top
// priority; a Store that claims again and again with the same agent and
// filters, while no other connection has written (PRAGMA data_version is
// unchanged, and the Store's own commits do not change it) and within
// queueTTL, takes the next id of the order it already has, after checking
// that issue against the full specification inside the transaction.
type queue struct {
	mu      sync.Mutex
	key     string
	version int64
	at      time.Time
	ids     []string // the remaining order; nil until the second claim asks for it
}

// next returns the id of the next issue to claim, or sql.ErrNoRows. It runs
// inside the claim's write transaction, so nothing else can write meanwhile.
func (q *queue) next(ctx context.Context, conn db.DBTX, spec ReadySpecification, req Request, now time.Time) (string, error) {
	var version int64
	verr := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version)
	key, _ := json.Marshal(struct {
		Agent   string
		Filters Filters
	}{req.Agent, req.Filters})
	q.mu.Lock()
	defer q.mu.Unlock()
	var id string
	if verr != nil || q.key != string(key) || q.version != version || now.Sub(q.at) >= queueTTL || now.Before(q.at) {
		// A first claim, or the world moved (or its version could not be
		// read): sort afresh, and let the next claim build the whole order
		// if nothing changes until then.
		q.key, q.version, q.at, q.ids = string(key), version, now, nil
		return id, errors.Join(verr, queryRow(ctx, conn, spec.next()).Scan(&id))
	}
	if q.ids == nil {
		var list string
		if err := queryRow(ctx, conn, spec.order()).Scan(&list); err != nil {
			return "", err
		}
		q.ids = []string{}
		_ = json.Unmarshal([]byte(list), &q.ids) // SQLite's json_group_array output
	}
	for len(q.ids) > 0 {
		err := queryRow(ctx, conn, spec.byID(q.ids[0])).Scan(&id)
		if !errors.Is(err, sql.ErrNoRows) {
			return id, err
		}
		q.ids = q.ids[1:] // no longer claimable
	}
	return "", sql.ErrNoRows
}

// taken drops a committed claim from the front of the order.
func (q *queue) taken(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ids) > 0 && q.ids[0] == id {
		q.ids = q.ids[1:]
	}
}
