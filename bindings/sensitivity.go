package bindings

import "fmt"

// String returns the config spelling: "public", "internal" or "secret".
func (s Sensitivity) String() string {
	switch s {
	case Public:
		return "public"
	case Internal:
		return "internal"
	case Secret:
		return "secret"
	}
	return fmt.Sprintf("Sensitivity(%d)", int(s))
}

// MarshalText writes the config spelling, so JSON output of a Spec reads
// "secret" rather than 2.
func (s Sensitivity) MarshalText() ([]byte, error) {
	if s < Public || s > Secret {
		return nil, fmt.Errorf("invalid sensitivity %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText accepts the config spelling.
func (s *Sensitivity) UnmarshalText(b []byte) error {
	v, err := ParseSensitivity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSensitivity parses "public", "internal" or "secret".
func ParseSensitivity(name string) (Sensitivity, error) {
	switch name {
	case "public":
		return Public, nil
	case "internal":
		return Internal, nil
	case "secret":
		return Secret, nil
	}
	return Public, fmt.Errorf("unknown sensitivity %q (want public, internal or secret)", name)
}
