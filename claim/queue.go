package claim

import (
	"encoding/json"
	"errors"
	"time"
)

// queueTTL bounds how long a remembered claim order is trusted: readiness
// can also change with the clock alone (a defer_until passing, the 48h
// boundary of the hybrid order), which no write announces.
const queueTTL = time.Second

// queue remembers the claim order between claims of one Store. Sorting the
// candidates costs time in proportion to the open issues of the top
// priority; a Store that claims again and again with the same filters,
// for one agent or many, while no other connection has written (PRAGMA data_version is
// unchanged, and the Store's own commits do not change it) and within
// queueTTL, takes the next id of the order it already has, after checking
// that issue against the claiming agent's specification inside the
// transaction. The order is the one every agent with those filters shares
// (readySpec.shared): an agent that also has an open issue assigned to it
// sorts afresh instead.
type queue struct {
	version int64
	at      time.Time
	ids     []string            // the remaining order; nil until the second claim asks for it
	gone    map[string]struct{} // ids the Store has claimed since, for any agent (see queues.taken)
	// alone are the agents found, since version and at, to have no
	// claimable open issue of their own, so that the order is theirs too.
	// Only another connection's write (a new version) can assign one: the
	// Store's own writes assign an issue as they claim it.
	alone map[string]struct{}
}

// next returns the id of the next issue to claim (ok false when there is
// none), from the order or else from sorted (a sort of the candidates
// afresh). It runs inside the claim's write transaction t, so nothing else
// can write meanwhile.
func (q *queue) next(t *txn, spec readySpec, sorted func() (string, bool, error)) (id string, ok bool, err error) {
	var version int64
	verr := t.conn.QueryRowContext(t.ctx, "PRAGMA data_version").Scan(&version)
	if verr != nil || q.version != version || t.now.Sub(q.at) >= queueTTL || t.now.Before(q.at) {
		// A first claim, or the world moved (or its version could not be
		// read): sort afresh, and let the next claim build the whole order
		// if nothing changes until then.
		q.version, q.at, q.ids, q.gone, q.alone = version, t.now, nil, nil, nil
	} else if id, ok, err = q.walk(t, spec); ok || err != nil {
		return id, ok, err
	}
	// Sorted afresh too when the order is spent: an issue that became
	// claimable through the Store's own connection (its release) is not in
	// it.
	id, ok, err = sorted()
	return id, ok, errors.Join(verr, err)
}

// walk returns the first id of the order that is still claimable, building
// the order when the claim before only started it. Once none is left it
// drops the order (nil), so that the next claim builds it again.
func (q *queue) walk(t *txn, spec readySpec) (id string, ok bool, err error) {
	if _, alone := q.alone[spec.agent]; !alone && spec.agent != "" {
		// An agent with a claimable open issue of its own has an order of
		// its own: it sorts afresh.
		if own, err := found(t.queryRow(spec.ownOpen()).Scan(&id)); own || err != nil {
			return "", false, err
		}
		if q.alone == nil {
			q.alone = map[string]struct{}{}
		}
		q.alone[spec.agent] = struct{}{}
	}
	if q.ids == nil {
		var list string
		if err := t.queryRow(spec.shared().claimOrder()).Scan(&list); err != nil {
			return "", false, err
		}
		q.ids = []string{}
		_ = json.Unmarshal([]byte(list), &q.ids) // SQLite's json_group_array output
	}
	for len(q.ids) > 0 {
		if _, gone := q.gone[q.ids[0]]; gone {
			delete(q.gone, q.ids[0])
			q.ids = q.ids[1:]
			continue
		}
		if ok, err = found(t.queryRow(spec.byID(q.ids[0])).Scan(&id)); ok || err != nil {
			return id, ok, err
		}
		q.ids = q.ids[1:] // no longer claimable
	}
	q.ids = nil
	return "", false, nil
}

// maxQueues bounds the orders a Store remembers, one per set of filters.
const maxQueues = 64

// queues are a Store's remembered orders, by filters: agents that claim
// with the same filters share one, so that eight agents sort once, not
// eight times.
type queues map[string]*queue

// of returns the order for req, starting over when too many are kept.
func (qs *queues) of(req Request) *queue {
	key, _ := json.Marshal(req.Filters)
	q := (*qs)[string(key)]
	if q == nil {
		if len(*qs) >= maxQueues {
			*qs = queues{}
		}
		q = &queue{}
		(*qs)[string(key)] = q
	}
	return q
}

// taken tells every order of the Store that it claimed issue id at now:
// the Store's own commits leave PRAGMA data_version unchanged, so the
// orders of its other filters would otherwise look the issue up again,
// inside the lock, to find it taken. The claim's own order has it in
// front. An order past queueTTL is dropped instead (its next claim sorts
// afresh anyway), so that an idle order does not grow with everyone
// else's claims.
func (qs queues) taken(id string, now time.Time) {
	for _, q := range qs {
		switch {
		case now.Sub(q.at) >= queueTTL:
			q.ids, q.gone = nil, nil
		case len(q.ids) > 0 && q.ids[0] == id:
			q.ids = q.ids[1:]
		case q.ids != nil:
			if q.gone == nil {
				q.gone = map[string]struct{}{}
			}
			q.gone[id] = struct{}{}
		}
	}
}
