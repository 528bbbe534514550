package norm

import (
	"time"

	"github.com/agenthost/agenthost/internal/jsonenc"
)

func AppendField(b []byte, key, value string) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return AppendString(b, value)
}

func AppendStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// AppendTime writes t as a JSON string in time.RFC3339Nano, the bytes
// encoding/json writes for a time.Time. A time in UTC from year 0 to 9999
// (every record's: NewRecord takes its time in UTC) is written by hand,
// the same bytes as t.AppendFormat's (FuzzAppendTime); any other goes
// through AppendFormat.
func AppendTime(b []byte, t time.Time) []byte {
	if t.Location() != time.UTC {
		return appendTimeFormat(b, t)
	}
	secs := t.Unix()
	if secs < minUTCSecs || secs > maxUTCSecs {
		return appendTimeFormat(b, t)
	}
	since := uint64(secs - minUTCSecs)
	days, rem := int64(since/86400), int(since%86400)
	year, month, day := civil(days)
	var buf [32]byte
	buf[0] = '"'
	put2(buf[1:], year/100)
	put2(buf[3:], year%100)
	buf[5] = '-'
	put2(buf[6:], month)
	buf[8] = '-'
	put2(buf[9:], day)
	buf[11] = 'T'
	put2(buf[12:], rem/3600)
	buf[14] = ':'
	put2(buf[15:], rem/60%60)
	buf[17] = ':'
	put2(buf[18:], rem%60)
	n := 20
	if ns := t.Nanosecond(); ns != 0 {
		// Nine digits, the trailing zeros dropped, as RFC3339Nano's .999999999.
		buf[20] = '.'
		buf[21] = byte('0' + ns/1e8)
		ns %= 1e8
		put2(buf[22:], ns/1e6)
		ns %= 1e6
		put2(buf[24:], ns/1e4)
		ns %= 1e4
		put2(buf[26:], ns/100)
		put2(buf[28:], ns%100)
		n = 30
		for buf[n-1] == '0' {
			n--
		}
	}
	buf[n] = 'Z'
	buf[n+1] = '"'
	return append(b, buf[:n+2]...)
}

func appendTimeFormat(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// The Unix seconds of 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the
// years AppendTime writes by hand.
const (
	minUTCSecs = -62167219200
	maxUTCSecs = 253402300799
)

// civil is the date days after 0000-01-01 (proleptic Gregorian, as
// package time counts): Howard Hinnant's days-to-civil, whose years start
// on March 1 (year 0 is a leap year: its March 1 is day 60).
func civil(days int64) (year, month, day int) {
	z := days - 60 // days since 0000-03-01
	era := z
	if era < 0 {
		era -= 146096
	}
	era /= 146097
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100) // [0, 365]
	mp := (5*doy + 2) / 153                  // [0, 11], March first
	day = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		month = int(mp + 3)
	} else {
		month = int(mp - 9)
		y++
	}
	return int(y), month, day
}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// put2 writes v (0 to 99) as two digits.
func put2(b []byte, v int) {
	b[1], b[0] = digitPairs[2*v+1], digitPairs[2*v]
}

// AppendString writes s as a JSON string, as encoding/json does without
// HTML escaping.
func AppendString(b []byte, s string) []byte { return jsonenc.AppendString(b, s, false) }
