package skillsprotocol

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/iii-skills/skills/server/internal/store"
)

// StoreFile is the file of the server's own Skills Protocol store (blobs
// and bundles published over iii) in its data folder.
const StoreFile = "skills-protocol.db"

// localState is State over the server's own store: a bbolt file of the
// skills process, so no engine client can read blobs (other users' run
// outputs and logs) or rewrite a published bundle through state::*, as
// it could when both lived in engine state.
type localState struct{ st *store.Store }

// LocalState returns State over st, a store this process owns
// (store.Open of StoreFile in the data folder). The caller closes st
// after the Runtime.
func LocalState(st *store.Store) State { return localState{st} }

func (s localState) Get(_ context.Context, scope, key string) (json.RawMessage, error) {
	raw, ok, err := s.st.Get(scope, key)
	if err != nil || !ok {
		return nil, err
	}
	return raw, nil
}

func (s localState) Set(_ context.Context, scope, key string, value any) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("store %s/%s: encode: %w", scope, key, err)
	}
	_, err = s.st.Set(scope, key, raw)
	return err
}

func (s localState) List(_ context.Context, scope string) ([]json.RawMessage, error) {
	return s.st.List(scope)
}

func (s localState) Delete(_ context.Context, scope, key string) error {
	_, _, err := s.st.Delete(scope, key)
	return err
}
