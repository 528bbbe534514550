package approvals

import (
	"fmt"

	"github.com/agenthost/agenthost/approvals/ids"
)

// ErrInvalidApproverID: a vote's approver id is not a valid id (see
// ids.NormalizeID). It matches ErrNoApproverID too: the vote cannot count.
var ErrInvalidApproverID = fmt.Errorf("%w: the approver id is not a valid id (it holds an invisible, default-ignorable or otherwise refused character)", ErrNoApproverID)

// voterKey is the one rule for whether an approver's vote can count on a
// request raised by requesters (the session's subject, and the API
// identity that started the turn, when there is one): it returns the
// approver's normalised id, under which the quorum counts distinct
// approvers, or ErrNoApproverID (blank), ErrInvalidApproverID or
// ErrSelfApproval (the approver may be one of the requesters, see ids.SameID).
func voterKey(approver string, requesters ...string) (string, error) {
	key, err := ids.NormalizeID(approver)
	switch {
	case err != nil:
		return "", ErrInvalidApproverID
	case key == "":
		return "", ErrNoApproverID
	}
	for _, r := range requesters {
		if ids.SameID(approver, r) {
			if _, err := ids.NormalizeID(r); err != nil {
				return "", fmt.Errorf("%w (the requester's id is not a valid id, so no approver can be told apart from it)", ErrSelfApproval)
			}
			return "", ErrSelfApproval
		}
	}
	return key, nil
}
