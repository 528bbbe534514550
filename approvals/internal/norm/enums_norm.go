package norm

import (
	"strings"
)

// Rank is the position of v in order; anything unknown ranks as the most
// restrictive value, which is what normalisation turns it into.
func Rank[T ~string](order []T, v T) int {
	for i, o := range order {
		if o == v {
			return i
		}
	}
	return len(order) - 1
}

func Known[T ~string](order []T, v T) bool {
	for _, o := range order {
		if o == v {
			return true
		}
	}
	return false
}

// NormEnum returns v if it is a known value, else the most restrictive one.
func NormEnum[T ~string](order []T, v T) T {
	if Known(order, v) {
		return v
	}
	return order[len(order)-1]
}

func MaxEnum[T ~string](order []T, a, b T) T {
	if Rank(order, b) > Rank(order, a) {
		return NormEnum(order, b)
	}
	return NormEnum(order, a)
}

// RaiseBy moves v up by steps, stopping at the most restrictive value.
func RaiseBy[T ~string](order []T, v T, steps int) T {
	i := Rank(order, v) + steps
	if i >= len(order) {
		i = len(order) - 1
	}
	return order[i]
}

// WantList renders the allowed values for error messages:
// "low, medium, high or critical".
func WantList[T ~string](order []T) string {
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = string(o)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
