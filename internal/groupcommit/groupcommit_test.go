package groupcommit

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every write returns only after its batch committed; concurrent writers
// share batches; a failed batch fails each of its writes.
func TestCommitterBatchesAndReportsEachWrite(t *testing.T) {
	var mu sync.Mutex
	committed := map[int]bool{}
	batches := 0
	release := make(chan struct{})
	c := New(func(_ context.Context, batch []int) error {
		<-release
		mu.Lock()
		defer mu.Unlock()
		batches++
		for _, v := range batch {
			if v < 0 {
				return errors.New("refused")
			}
		}
		for _, v := range batch {
			committed[v] = true
		}
		return nil
	}, 64)
	const writers = 50
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			errs[i] = c.Write(context.Background(), i)
			mu.Lock()
			defer mu.Unlock()
			if errs[i] == nil && !committed[i] {
				t.Errorf("write %d returned before its batch committed", i)
			}
		})
	}
	close(release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
	}
	if err := c.Write(context.Background(), -1); err == nil || err.Error() != "refused" {
		t.Errorf("failed batch: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), 1); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
}
