package approvals

// NewInferrer lets the tests, including the external ones, build an inferrer
// without a Policy; the library obtains one from Policy.Inferrer.
var NewInferrer = newInferrer
