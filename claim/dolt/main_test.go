package dolt

import (
	"os"
	"testing"

	"github.com/bdclaim/bd-claim/claim/claimtest"
)

func TestMain(m *testing.M) { os.Exit(claimtest.DoltMain(m)) }
