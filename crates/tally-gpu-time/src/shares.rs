//! stormlog's `validate_request_shares`: an explicit model of each member
//! request's share of one iteration's GPU time, checked against the measured
//! budget.

use tally_core::{EntityRef, NonEmptyString};
use tally_resolve::ResolvedEvidence;
use tally_utils::fast_hash::{FastHashMap, FastHashSet};

use crate::{DeviceClock, RunAccounting};

/// Why a share model was rejected. The messages are stormlog's; [`ShareError::rule`]
/// names the rule in a stable, short form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// A share's duration is negative (or not an integer).
    #[error("estimated duration_ns must be non-negative")]
    NegativeDuration,
    /// A share names no model.
    #[error("request share needs a model name")]
    MissingModel,
    /// The iteration has no measured GPU time on that device clock.
    #[error("no measured GPU budget for iteration and device clock")]
    NoBudget,
    /// The unattributed remainder is negative.
    #[error("unattributed_ns must be non-negative")]
    NegativeRemainder,
    /// A share's request (or request and attempt) is no member of the iteration.
    #[error("estimated request is not a member of the iteration")]
    NotMember {
        /// The share's position in the model.
        share: usize,
    },
    /// Two shares for one request and attempt.
    #[error("duplicate request share")]
    Duplicate {
        /// The second share's position.
        share: usize,
    },
    /// A share for a whole request beside one for an attempt of it.
    #[error("generic and attempt-specific request shares overlap")]
    GenericAndAttempt {
        /// The later share's position.
        share: usize,
    },
    /// Shares from more than one estimation model.
    #[error("request shares must use one estimation model")]
    SeveralModels,
    /// Shares and remainder do not add up to the budget.
    #[error("estimated shares and remainder must equal the measured budget")]
    SumMismatch {
        /// The measured budget (`busy_ns`).
        budget_ns: u64,
        /// Shares plus remainder.
        total_ns: i128,
    },
}

impl ShareError {
    /// The rule, as the conformance corpus names it.
    pub fn rule(&self) -> &'static str {
        match self {
            ShareError::NegativeDuration => "negative-duration",
            ShareError::MissingModel => "missing-model",
            ShareError::NoBudget => "no-budget",
            ShareError::NegativeRemainder => "negative-remainder",
            ShareError::NotMember { .. } => "not-member",
            ShareError::Duplicate { .. } => "duplicate-share",
            ShareError::GenericAndAttempt { .. } => "generic-and-attempt",
            ShareError::SeveralModels => "several-models",
            ShareError::SumMismatch { .. } => "sum-mismatch",
        }
    }
}

/// stormlog's `RequestShareEstimate`: one request's (or attempt's) modelled
/// share of an iteration's GPU time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestShareEstimate {
    /// The request.
    pub request_ref: EntityRef,
    /// The attempt, when the share is for one attempt only.
    pub attempt_ref: Option<EntityRef>,
    /// The modelled share.
    pub duration_ns: u64,
    /// The estimation model's name.
    pub model: NonEmptyString,
}

impl RequestShareEstimate {
    /// Checks stormlog's construction rules: a non-negative duration (given
    /// wide, so a negative one read from JSON is reported as stormlog reports
    /// it) and a non-empty model name.
    pub fn new(
        request_ref: EntityRef,
        attempt_ref: Option<EntityRef>,
        duration_ns: i128,
        model: &str,
    ) -> Result<Self, ShareError> {
        let duration_ns = u64::try_from(duration_ns).map_err(|_| ShareError::NegativeDuration)?;
        let model = NonEmptyString::new(model).map_err(|_| ShareError::MissingModel)?;
        Ok(Self { request_ref, attempt_ref, duration_ns, model })
    }
}

/// A share model that matched its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareBudget {
    /// The iteration's measured busy time on the device clock.
    pub budget_ns: u64,
    /// The shares' sum.
    pub attributed_ns: u128,
    /// The remainder no request was charged.
    pub unattributed_ns: u64,
    /// How many shares.
    pub share_count: usize,
}

/// stormlog's `validate_request_shares`, rule for rule and in its order:
///
/// 1. the iteration has a measured GPU budget on `device_clock`;
/// 2. `unattributed_ns` is non-negative;
/// 3. per share, in order: its request (and attempt, when given) is a member
///    of the iteration (a share without attempt matches any member of that
///    request); no duplicate; no share for a whole request beside one for an
///    attempt of it;
/// 4. one estimation model;
/// 5. shares plus remainder equal the budget (`busy_ns`) exactly.
pub fn validate_request_shares(
    graph: &(impl ResolvedEvidence + ?Sized),
    accounting: &RunAccounting<'_>,
    iteration_ref: &EntityRef,
    device_clock: &DeviceClock<'_>,
    shares: &[RequestShareEstimate],
    unattributed_ns: i128,
) -> Result<ShareBudget, ShareError> {
    let budget = accounting
        .iteration(iteration_ref)
        .and_then(|timing| timing.on(device_clock))
        .ok_or(ShareError::NoBudget)?;
    let unattributed = u64::try_from(unattributed_ns).map_err(|_| ShareError::NegativeRemainder)?;

    let mut member_requests: FastHashSet<&EntityRef> = FastHashSet::default();
    let mut members: FastHashSet<(&EntityRef, Option<&EntityRef>)> = FastHashSet::default();
    for membership in graph.membership_facts() {
        if membership.iteration_ref == iteration_ref {
            member_requests.insert(membership.request_ref);
            members.insert((membership.request_ref, membership.attempt_ref));
        }
    }

    /// What shares so far said about one request.
    #[derive(Default)]
    struct Seen<'s> {
        generic: bool,
        attempts: Vec<&'s EntityRef>,
    }
    let mut seen: FastHashMap<&EntityRef, Seen<'_>> = FastHashMap::default();
    let mut first_model: Option<&NonEmptyString> = None;
    let mut several_models = false;
    for (index, share) in shares.iter().enumerate() {
        match first_model {
            None => first_model = Some(&share.model),
            Some(model) => several_models |= *model != share.model,
        }
        let attempt = share.attempt_ref.as_ref();
        let member = match attempt {
            None => member_requests.contains(&share.request_ref),
            Some(attempt) => members.contains(&(&share.request_ref, Some(attempt))),
        };
        if !member {
            return Err(ShareError::NotMember { share: index });
        }
        let state = seen.entry(&share.request_ref).or_default();
        match attempt {
            None => {
                if state.generic {
                    return Err(ShareError::Duplicate { share: index });
                }
                if !state.attempts.is_empty() {
                    return Err(ShareError::GenericAndAttempt { share: index });
                }
                state.generic = true;
            }
            Some(attempt) => {
                if state.attempts.contains(&attempt) {
                    return Err(ShareError::Duplicate { share: index });
                }
                if state.generic {
                    return Err(ShareError::GenericAndAttempt { share: index });
                }
                state.attempts.push(attempt);
            }
        }
    }
    if several_models {
        return Err(ShareError::SeveralModels);
    }
    let attributed: u128 = shares.iter().map(|share| u128::from(share.duration_ns)).sum();
    let total = attributed + u128::from(unattributed);
    if total != u128::from(budget.busy_ns) {
        return Err(ShareError::SumMismatch {
            budget_ns: budget.busy_ns,
            total_ns: i128::try_from(total).unwrap_or(i128::MAX),
        });
    }
    Ok(ShareBudget {
        budget_ns: budget.busy_ns,
        attributed_ns: attributed,
        unattributed_ns: unattributed,
        share_count: shares.len(),
    })
}
