package claim_test

import (
	"context"
	"fmt"
	"os"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/engines"
	"github.com/bdclaim/bd-claim/claim/sqlite"
	"github.com/bdclaim/bd-claim/claim/workspace"
)

// An orchestrator opens a workspace once and claims many times, with the
// same semantics, errors and footprint as the bd-claim command.
func ExampleStore_Claim() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	if _, err := sqlite.CreateDemo(ctx, dir, 50, 1); err != nil { // a bd v0.49 SQLite workspace of 50 issues
		panic(err)
	}

	ws, err := workspace.Find(workspace.Locate{Start: dir, Getenv: os.Getenv})
	if err != nil {
		panic(err)
	}
	store, err := engines.Open(ctx, ws, claim.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	for range 3 {
		res, err := store.Claim(ctx, claim.Request{Agent: "worker-1"})
		switch {
		case err != nil:
			fmt.Println(claim.ErrorCode(err), claim.ErrorMessage(err))
		case res.Issue == nil:
			fmt.Println("no work")
		default:
			fmt.Printf("claimed %s (P%d) as %s\n", res.Issue.ID, res.Issue.Priority, res.Issue.Status)
		}
	}
	// Output:
	// claimed demo-15 (P0) as in_progress
	// claimed demo-20 (P0) as in_progress
	// claimed demo-38 (P0) as in_progress
}

// Claiming one named issue is a compare-and-swap: a second agent is told who
// holds it.
func ExampleStore_Claim_byID() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)
	demo, err := sqlite.CreateDemo(ctx, dir, 20, 1)
	if err != nil {
		panic(err)
	}
	store, err := engines.Open(ctx, claim.Workspace{DBPath: demo.Path}, claim.Options{})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	id := demo.Ready[0]
	_, err = store.Claim(ctx, claim.Request{Agent: "alice", ID: id})
	fmt.Println("alice:", err)
	_, err = store.Claim(ctx, claim.Request{Agent: "bob", ID: id})
	fmt.Println("bob:", claim.ErrorCode(err))
	// Output:
	// alice: <nil>
	// bob: ALREADY_CLAIMED
}
