package memory_test

import (
	"errors"
	"testing"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/store/storetest"
)

func TestStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return &memory.Store{} })
}

func TestSecondWriterIsErrInUse(t *testing.T) {
	var s memory.Store
	j, err := s.Create(t.Context(), store.Manifest{ID: "j"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(t.Context(), "j"); !errors.Is(err, store.ErrInUse) {
		t.Errorf("Open while the creating Job is open: err = %v, want store.ErrInUse", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, err := s.Open(t.Context(), "j")
	if err != nil {
		t.Fatalf("Open after the writer closed: %v", err)
	}
	_ = j2.Close()
}
