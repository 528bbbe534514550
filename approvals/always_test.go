package approvals

import "testing"

func TestAlwaysBar(t *testing.T) {
	grantable := Request{SessionGrantable: true, Approvers: 1}
	with := func(f func(*Request)) *Request { r := grantable; f(&r); return &r }
	for _, tc := range []struct {
		name string
		req  *Request
		want AlwaysBar
	}{
		{"one approver, classified, no rule", &grantable, AlwaysAllowed},
		{"no approver count", with(func(r *Request) { r.Approvers = 0 }), AlwaysAllowed},
		{"unclassified", with(func(r *Request) { r.Unclassified, r.SessionGrantable = true, false }), AlwaysUnclassified},
		{"two approvers", with(func(r *Request) { r.Approvers, r.SessionGrantable = 2, false }), AlwaysNeedsApprovers},
		{"unclassified and two approvers", with(func(r *Request) { r.Unclassified, r.Approvers = true, 2 }), AlwaysUnclassified},
		{"a rule asks", with(func(r *Request) { r.Rules = []string{"writes-ask"} }), AlwaysRuleAsks},
		{"two approvers and a rule", with(func(r *Request) { r.Approvers, r.Rules = 2, []string{"x"} }), AlwaysNeedsApprovers},
		{"not grantable", with(func(r *Request) { r.SessionGrantable = false }), AlwaysNotGrantable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.req.AlwaysBar(); got != tc.want {
				t.Errorf("AlwaysBar = %d, want %d", got, tc.want)
			}
		})
	}
}
