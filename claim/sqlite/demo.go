package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/bdclaim/bd-claim/claim/engine"
	"github.com/bdclaim/bd-claim/db"
	beadssql "github.com/bdclaim/bd-claim/sql"
)

// Demo is a generated workspace and what a full drain of it must claim.
type Demo struct {
	Path    string   // the database, dir/.beads/beads.db
	Ready   []string // open, unblocked, unassigned: each must be claimed exactly once
	Blocked []string // open but blocked: none may be claimed
}

// CreateDemo writes a Beads workspace with n issues into dir/.beads from the
// vendored schema, as `bd init` leaves one (in WAL mode), seeded by
// SeedDemo. It refuses an existing database.
func CreateDemo(ctx context.Context, dir string, n int, seed uint64) (Demo, error) {
	beads := filepath.Join(dir, ".beads")
	path := filepath.Join(beads, "beads.db")
	err := os.MkdirAll(beads, 0o755)
	if err == nil {
		err = Create(ctx, path)
	}
	if err != nil {
		return Demo{Path: path}, err
	}
	conn := OpenDB(path, 5*time.Second)
	defer conn.Close()
	demo, err := SeedDemo(ctx, conn, n, seed)
	demo.Path = path
	return demo, err
}

// SeedDemo fills an empty database made from the vendored schema, in one
// transaction, with n issues: priorities skewed towards P2, about 30%
// labelled, about 20% blocked through blocks edges and epics whose children
// inherit their blockage, and a few issues already in progress or closed.
// The same seed gives the same issues, labels and edges (timestamps are
// relative to now, so that bd's hybrid order sees recent work).
func SeedDemo(ctx context.Context, conn *sql.DB, n int, seed uint64) (Demo, error) {
	var demo Demo
	err := Tx(ctx, conn, engine.Retry{Attempts: 1}, func(tx *sql.Tx) error {
		q := db.New()
		// What bd init writes: its version (metadata) and the issue prefix
		// (config), without which bd v0.27 refuses the workspace.
		err := q.SeedMetadataSet(ctx, tx, db.SeedMetadataSetParams{Key: "bd_version", Value: beadssql.SchemaVersion})
		if err == nil {
			err = q.SeedConfigSet(ctx, tx, db.SeedConfigSetParams{Key: "issue_prefix", Value: "demo"})
		}
		if err != nil {
			return err
		}
		fl, err := detectFlavor(ctx, tx)
		if err != nil {
			return err
		}
		return seedDemo(ctx, tx, fl, n, rand.New(rand.NewPCG(seed, seed)), &demo)
	})
	return demo, err
}

var (
	demoPriorities = []int{0, 1, 1, 2, 2, 2, 2, 2, 3, 3, 4}
	demoTypes      = []string{"task", "task", "bug", "feature", "chore"}
	demoLabels     = []string{"backend", "frontend", "infra", "docs", "urgent"}
)

func seedDemo(ctx context.Context, tx *sql.Tx, fl flavor, n int, rnd *rand.Rand, demo *Demo) error {
	q := db.New()
	base := time.Now().UTC().Add(-time.Duration(n) * time.Minute)
	status := make(map[string]string, n)
	blocked := map[string]bool{}
	var ids []string
	var epic string // the current epic; its children follow it
	for i := range n {
		id := fmt.Sprintf("demo-%d", i+1)
		cols := columns{}
		r := &engine.Row{Data: cols, Issue: engine.Issue{ID: id, Status: "open", Priority: demoPriorities[rnd.IntN(len(demoPriorities))],
			IssueType: demoTypes[rnd.IntN(len(demoTypes))], Title: fmt.Sprintf("Demo issue %d", i+1)}}
		created := fl.rowAt(base.Add(time.Duration(i) * time.Minute))
		var closed sql.NullString
		switch roll := rnd.IntN(100); {
		case i%25 == 0:
			r.IssueType, epic = "epic", id
		case roll < 3:
			r.Status, r.Assignee = "in_progress", "human"
		case roll < 6:
			r.Status, closed = "closed", sql.NullString{String: created, Valid: true}
		}
		for c, v := range map[string]string{"title": r.Title, "status": r.Status, "priority": fmt.Sprint(r.Priority),
			"issue_type": r.IssueType, "assignee": r.Assignee} {
			cols[c] = sql.NullString{String: v, Valid: true}
		}
		err := q.SeedIssueInsert(ctx, tx, db.SeedIssueInsertParams{ID: id, ContentHash: sql.NullString{String: fl.contentHash(r), Valid: true},
			Title: r.Title, Status: r.Status, Priority: int64(r.Priority), IssueType: r.IssueType,
			Assignee: sql.NullString{String: r.Assignee, Valid: true}, CreatedAt: created, UpdatedAt: created, ClosedAt: closed})
		for _, l := range demoLabels {
			if err == nil && rnd.IntN(100) < 12 {
				err = q.SeedLabelInsert(ctx, tx, db.SeedLabelInsertParams{IssueID: id, Label: l})
			}
		}
		edge := func(on, typ string) {
			if err == nil {
				err = q.SeedDependencyInsert(ctx, tx, db.SeedDependencyInsertParams{IssueID: id, DependsOnID: on, Type: typ,
					CreatedAt: sql.NullString{String: created, Valid: true}, CreatedBy: "demo"})
			}
		}
		switch {
		case epic != "" && epic != id && rnd.IntN(100) < 40:
			edge(epic, "parent-child")
			blocked[id] = blocked[epic]
		case len(ids) > 0 && rnd.IntN(100) < 20:
			on := ids[rnd.IntN(len(ids))]
			edge(on, "blocks")
			blocked[id] = status[on] != "closed"
		}
		if err != nil {
			return err
		}
		status[id] = r.Status
		ids = append(ids, id)
	}
	for _, id := range ids {
		switch {
		case blocked[id]:
			if err := q.SeedBlockedInsert(ctx, tx, id); err != nil {
				return err
			}
			if status[id] == "open" {
				demo.Blocked = append(demo.Blocked, id)
			}
		case status[id] == "open":
			demo.Ready = append(demo.Ready, id)
		}
	}
	return nil
}
