package norm

import (
	"testing"
	"time"
)

// timeBefore is AppendTime as it was: the time through AppendFormat.
func timeBefore(t time.Time) string {
	return `"` + t.Format(time.RFC3339Nano) + `"`
}

func TestAppendTime(t *testing.T) {
	zone := time.FixedZone("X", -(3*3600 + 30*60))
	for _, c := range []struct {
		name string
		t    time.Time
		want string
	}{
		{"nanos", time.Date(2026, 12, 3, 7, 1, 2, 345678900, time.UTC), `"2026-12-03T07:01:02.3456789Z"`},
		{"whole second", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), `"2026-01-01T00:00:00Z"`},
		{"one nanosecond", time.Date(2024, 2, 29, 23, 59, 59, 1, time.UTC), `"2024-02-29T23:59:59.000000001Z"`},
		{"milliseconds", time.Date(1999, 12, 31, 23, 59, 59, 100000000, time.UTC), `"1999-12-31T23:59:59.1Z"`},
		{"first hand-written", time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), `"0000-01-01T00:00:00Z"`},
		{"last hand-written", time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), `"9999-12-31T23:59:59.999999999Z"`},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), `"10000-01-01T00:00:00Z"`},
		{"year -1", time.Date(-1, 12, 31, 23, 59, 59, 0, time.UTC), `"-0001-12-31T23:59:59Z"`},
		{"the zero time", time.Time{}, `"0001-01-01T00:00:00Z"`},
		{"before 1970", time.Date(1969, 12, 31, 23, 59, 59, 5, time.UTC), `"1969-12-31T23:59:59.000000005Z"`},
		{"in a zone", time.Date(2026, 12, 3, 7, 1, 2, 0, zone), `"2026-12-03T07:01:02-03:30"`},
		{"a zero offset that is not UTC", time.Date(2026, 12, 3, 7, 1, 2, 0, time.FixedZone("Z0", 0)), `"2026-12-03T07:01:02Z"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := string(AppendTime([]byte("x"), c.t)); got != "x"+c.want {
				t.Errorf("AppendTime = %s, want x%s", got, c.want)
			}
			if got, want := string(AppendTime(nil, c.t)), timeBefore(c.t); got != want {
				t.Errorf("AppendTime = %s, AppendFormat %s", got, want)
			}
		})
	}
}

// FuzzAppendTime: the hand-written UTC time is AppendFormat's for any
// instant (every day of the years it writes by hand and beyond them), in
// UTC, a fixed zone or the local one.
func FuzzAppendTime(f *testing.F) {
	for _, s := range []int64{0, -1, 1, 951782400, 1764745262, minUTCSecs, minUTCSecs - 1, maxUTCSecs, maxUTCSecs + 1, -62135596800} {
		f.Add(s, int64(123456789), int32(0), uint8(0))
		f.Add(s, int64(0), int32(3600), uint8(1))
		f.Add(s, int64(999999999), int32(0), uint8(2))
	}
	f.Fuzz(func(t *testing.T, secs, nsec int64, offset int32, where uint8) {
		// A few days beyond each end of the hand-written years, else any.
		switch where % 4 {
		case 0:
			secs = minUTCSecs + secs%(maxUTCSecs-minUTCSecs+1)
		case 1:
			secs = minUTCSecs + secs%(10*86400)
		case 2:
			secs = maxUTCSecs + secs%(10*86400)
		}
		tm := time.Unix(secs, nsec%1e9)
		switch where / 4 % 4 {
		case 0, 1:
			tm = tm.UTC()
		case 2:
			tm = tm.In(time.FixedZone("F", int(offset%(18*3600))))
		case 3:
			tm = tm.Local()
		}
		if got, want := string(AppendTime(nil, tm)), timeBefore(tm); got != want {
			t.Fatalf("AppendTime(%v) = %s, AppendFormat %s", tm, got, want)
		}
	})
}

// BenchmarkAppendTime: a record's time, by hand and through AppendFormat.
func BenchmarkAppendTime(b *testing.B) {
	tm := time.Date(2026, 12, 3, 7, 1, 2, 345678900, time.UTC)
	for _, c := range []struct {
		name string
		fn   func([]byte, time.Time) []byte
	}{{"now", AppendTime}, {"before", appendTimeFormat}} {
		b.Run(c.name, func(b *testing.B) {
			buf := make([]byte, 0, 64)
			for b.Loop() {
				buf = c.fn(buf[:0], tm)
			}
		})
	}
}
