# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The safety rule: a bad forecast never triggers a switch, cold starts take only sure wins, dwell, hysteresis."""

import numpy as np
import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.models.forecast_series import AGE, regime_age
from ansible_collections.tactician.nosql.plugins.module_utils.planning import cost_benefit as planner
from ansible_collections.tactician.nosql.plugins.module_utils.planning import safety

STEPS = 40
ROLL = planner.Roll(nodes=3, batch=1, restart_s=30.0)


def factors(r):
    """default, read-optimized, write-optimized, balanced (IRIS Fig. 1 trade-offs)."""
    return [1.0, 1.0 + 0.25 * r - 0.30 * (1 - r), 1.0 + 0.25 * (1 - r) - 0.30 * r, 1.08]


def make_line(path):
    F = np.asarray([[1000.0 * f for f in factors(r)] for r in path["read_ratio"]])
    return planner.Timeline(F, ROLL, step_s=30.0)


def flat(value, steps=STEPS):
    return {"read_ratio": [value] * steps}


def test_a_forecast_no_better_than_persistence_never_triggers_a_switch():
    # The forecast says a write phase comes; in the past it was wrong by far more than persistence was.
    forecast = {"read_ratio": [0.9] * 5 + [0.05] * (STEPS - 5)}
    bad = [[0.85] * STEPS for _i in range(20)]  # it always predicted writes that never came
    good = [[0.0] * STEPS for _i in range(20)]  # the read-heavy stretch went on
    decision = safety.decide(make_line, 1, forecast, flat(0.9), bad, good, since_switch_s=None)
    assert decision.target is None
    assert decision.basis == "persistence" and decision.skill <= 0


def test_a_skilled_forecast_that_waits_keeps_the_configuration():
    forecast = {"read_ratio": [0.9] * 20 + [0.05] * (STEPS - 20)}
    small = [[0.01] * STEPS for _i in range(20)]
    large = [[0.5] * STEPS for _i in range(20)]
    decision = safety.decide(make_line, 1, forecast, flat(0.9), small, large)
    assert decision.target is None and decision.basis == "forecast"


def test_a_skilled_forecast_switches_when_the_gain_holds_in_every_past_error():
    forecast = flat(0.05)
    small = [[0.02 * ((i % 3) - 1)] * STEPS for i in range(30)]
    large = [[0.6 * ((i % 2) * 2 - 1)] * STEPS for i in range(30)]
    decision = safety.decide(make_line, 1, forecast, flat(0.9), small, large)
    assert decision.target == 2 and decision.basis == "forecast"
    summary = decision.to_dict()
    assert summary["lower_gain_ops"] > 0 and summary["gain_low_share"] > 0


def test_a_cold_start_switches_only_to_a_configuration_that_wins_everywhere():
    # No error known: from the default only "balanced" (better at every read ratio) is safe.
    decision = safety.decide(make_line, 0, flat(0.95), flat(0.95))
    assert decision.basis == "cold start" and decision.target == 3
    # From balanced, read-optimized wins at 0.95 but loses elsewhere: no switch.
    assert safety.decide(make_line, 3, flat(0.95), flat(0.95)).target is None


def test_dwell_and_hysteresis():
    decision = safety.decide(make_line, 0, flat(0.95), flat(0.95), since_switch_s=100.0)
    assert decision.target is None and decision.basis == "dwell"
    policy = safety.SafetyPolicy(margin=0.0, back_margin=0.5)
    assert safety.decide(make_line, 0, flat(0.95), flat(0.95), policy=policy).target == 3
    assert safety.decide(make_line, 0, flat(0.95), flat(0.95), policy=policy, previous=3).target is None


def test_paths_of_one_episode_are_one_piece_of_evidence():
    assert safety.effective_paths(30, list(range(30)), 10) == 3
    assert safety.effective_paths(5, None, 10) == 5
    # 20 paths from 20 consecutive origins are one episode: below min_independent, a cold start.
    forecast = flat(0.05)
    zero = [[0.0] * STEPS for _i in range(20)]
    decision = safety.decide(make_line, 1, forecast, flat(0.9), zero, zero, origins=list(range(20)))
    assert decision.basis == "cold start"


def test_analogs_keep_the_origins_like_now():
    states = [{"read_ratio": 0.9}, {"read_ratio": 0.1}, {"read_ratio": 0.8}]
    assert safety.analogs(states, {"read_ratio": 0.85}, 0.1) == [0, 2]
    assert safety.analogs(None, {"read_ratio": 0.85}, 0.1) is None


def test_error_paths_and_skill():
    actual = [0.0, 1.0, 2.0, 3.0, 4.0]
    assert safety.error_paths(actual, {0: [1.0, 1.0], 1: [2.0, 2.0], 3: [4.0, 4.0]}, 2) == [[0.0, 1.0], [0.0, 1.0]]
    assert safety.persistence_paths(actual, [0, 1, 3], 2) == [[1.0, 2.0], [1.0, 2.0]]
    assert safety.skill([{"r": [0.1]}], [{"r": [0.2]}], 1) == pytest.approx(0.5)
    assert safety.skill([], [{"r": [0.2]}], 1) is None


def test_apply_errors_clips_to_the_field_bounds():
    out = safety.apply_errors({"read_ratio": [0.9, 0.9], "throughput": [10.0, 10.0]}, {"read_ratio": [0.3, -1.0]})
    assert out == {"read_ratio": [1.0, 0.0], "throughput": [10.0, 10.0]}


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"confidence": 1.5}, "safety.confidence"),
        ({"min_paths": 1}, "safety.min_paths"),
        ({"max_paths": 4, "min_paths": 8}, "safety.max_paths"),
        ({"speed": 1}, "safety.speed: not an option"),
    ],
)
def test_bad_settings_name_the_field(settings, message):
    with pytest.raises(safety.SafetyError, match=message):
        safety.SafetyPolicy.from_dict(settings)


def test_the_decision_is_plain_data_for_the_plan_file():
    import yaml

    decision = safety.decide(make_line, 0, flat(0.95), flat(0.95)).to_dict()
    text = yaml.safe_dump(decision)
    assert yaml.safe_load(text) == decision and decision["target"] == 3


def test_the_model_error_comes_from_the_surrogates_held_out_error():
    from ansible_collections.tactician.nosql.plugins.module_utils.planning import dynamic

    assert dynamic.model_error_of({"mape": 12.5}) == 0.125
    assert dynamic.model_error_of({"mape": 80.0}) == 0.5
    assert dynamic.model_error_of({"r2": 0.7}) is None and dynamic.model_error_of(None) is None
    # A model that cannot tell 10 % apart keeps a 9 % better candidate out.
    sure = safety.decide(make_line, 0, flat(0.5), flat(0.5), policy=safety.SafetyPolicy(model_error=0.0))
    unsure = safety.decide(make_line, 0, flat(0.5), flat(0.5), policy=safety.SafetyPolicy(model_error=0.1))
    assert sure.target == 3 and unsure.target is None


def test_a_cold_start_may_undo_the_last_switch_when_the_workload_turned_against_it():
    # Moved from balanced to write-optimized for a write phase; reads came back for good.
    reads = {"read_ratio": [0.95] * 20}
    decision = safety.decide(make_line, 2, flat(0.95), flat(0.95), previous=3, recent=reads)
    assert decision.basis == "cold start" and decision.target == 3 and "going back" in decision.reason
    # One step of reads after a write stretch is no turn yet; and without a previous switch there is no undo.
    turned = {"read_ratio": [0.05] * 19 + [0.95]}
    assert safety.decide(make_line, 2, flat(0.95), flat(0.95), previous=3, recent=turned).target is None
    assert safety.decide(make_line, 2, flat(0.95), flat(0.95), recent=reads).target is None


def test_the_long_run_takes_what_every_past_lookahead_favoured_and_nothing_the_blocks_disagree_on():
    # Read-heavy now; one past moment in eight turned to writes: over the next lookahead read-optimized wins on
    # average but not at the lower bound, so the next lookahead alone keeps balanced (3).
    errors = [[0.0] * STEPS if i % 8 else [-0.75] * STEPS for i in range(24)]
    alone = safety.decide(make_line, 3, flat(0.9), flat(0.9), errors, errors)
    assert alone.target is None and alone.basis == "persistence"
    # Eight past lookaheads, every one read-heavy: read-optimized pays over the long run.
    steady = {"read_ratio": [0.9 + 0.04 * ((i // STEPS) % 2) for i in range(8 * STEPS)]}
    lasting = safety.decide(make_line, 3, flat(0.9), flat(0.9), errors, errors, history=steady)
    assert lasting.target == 1 and lasting.basis == "history"
    assert lasting.to_dict()["lower_gain_ops"] > 0
    # Past lookaheads that swing between reads and writes: no long run to speak of.
    swinging = {"read_ratio": [0.95 if (i // STEPS) % 2 else 0.05 for i in range(8 * STEPS)]}
    assert safety.decide(make_line, 3, flat(0.9), flat(0.9), errors, errors, history=swinging).target is None
    # Fewer blocks than min_independent: nothing is concluded from them.
    short = {"read_ratio": steady["read_ratio"][: 2 * STEPS]}
    assert safety.long_run(make_line, short, 3, 1, STEPS, safety.SafetyPolicy()) is None


def test_a_regime_seen_too_seldom_is_a_cold_start_not_the_calm_of_other_regimes():
    # 30 origins, all in a write-heavy calm that never moved; now a read-heavy burst no origin saw.
    states = [{"read_ratio": 0.1} for _i in range(30)]
    calm = [[0.0] * STEPS for _i in range(30)]
    origins = [i * STEPS for i in range(30)]
    decision = safety.decide(
        make_line, 3, flat(0.95), flat(0.95), calm, calm, states=states, now={"read_ratio": 0.95}, origins=origins
    )
    # The calm of the write-heavy origins says nothing of the burst: read-optimized is no sure win, so no switch.
    assert decision.basis == "cold start" and decision.target is None
    # Without states (nothing to tell regimes apart) every origin counts, as before.
    assert safety.decide(make_line, 3, flat(0.95), flat(0.95), calm, calm, origins=origins).basis == "persistence"


def test_the_age_of_a_regime_picks_the_origins_whose_regime_was_as_old():
    assert regime_age([0.1, 0.9, 0.95, 0.9]) == 2 and regime_age([0.9]) == 0 and regime_age([]) == 0
    states = [{"read_ratio": 0.9, AGE: age} for age in (0, 1, 3, 10, 40)]
    assert safety.same_age(range(5), states, {"read_ratio": 0.9, AGE: 1}) == [0, 1, 2]
    assert safety.same_age(range(5), states, {"read_ratio": 0.9}) is None
    # Young read-heavy stretches ended within a minute half of the time, old ones went on: a stretch just begun
    # is not switched for, one that has lasted is.
    young = [{"read_ratio": 0.9, AGE: 1} for _i in range(12)]
    old = [{"read_ratio": 0.9, AGE: 30} for _i in range(12)]
    ended = [[0.0] * 2 + [-0.8 * (i % 2)] * (STEPS - 2) for i in range(12)]
    lasted = [[0.0] * STEPS for _i in range(12)]
    origins = [i * STEPS for i in range(24)]
    errors = ended + lasted

    def decide(age):
        return safety.decide(
            make_line,
            3,
            flat(0.9),
            flat(0.9),
            errors,
            errors,
            states=young + old,
            now={"read_ratio": 0.9, AGE: age},
            origins=origins,
        )

    assert decide(1).target is None
    assert decide(30).target == 1


def test_a_safer_configuration_needs_the_expected_gain_not_its_lower_bound():
    # Read-optimized in place in a write-heavy stretch; half the past write stretches turned read-heavy at once.
    paths = [[0.0] * STEPS if i % 2 else [0.9] * STEPS for i in range(20)]
    origins = [i * STEPS for i in range(20)]
    decision = safety.decide(make_line, 1, flat(0.05), flat(0.05), paths, paths, origins=origins)
    # Balanced's worst case (1.08 at every ratio) beats read-optimized's (0.70 at write-heavy): leaving the risk
    # needs the expected gain only. Write-optimized would be no safer than read-optimized: it needs the bound.
    assert decision.target == 3 and decision.assessment.get("safer")
    assert "safer than the configuration in place" in decision.reason
    assert safety.decide(make_line, 3, flat(0.05), flat(0.05), paths, paths, origins=origins).target is None


def test_a_switch_is_valued_over_what_it_commits_the_cluster_to_when_a_watching_controller_can_leave():
    # A read phase that has always lasted 28 more steps, then turned to writes for the rest of the lookahead.
    # Held for the whole lookahead (40 steps) read-optimized loses against balanced; held for its roll and the
    # dwell after it (3 x 30 s + 600 s = 23 steps), the workload never turned inside that commitment.
    turn = [[0.0] * 28 + [-0.9] * (STEPS - 28) for _i in range(12)]
    whole = safety.SafetyPolicy(horizon="lookahead")
    lookahead = safety.decide(make_line, 3, flat(0.95), flat(0.95), turn, turn, policy=whole)
    assert lookahead.target is None and lookahead.basis == "persistence"
    policy = safety.SafetyPolicy()
    assert policy.horizon == "commitment"
    committed = safety.decide(make_line, 3, flat(0.95), flat(0.95), turn, turn, policy=policy)
    assert committed.target == 1 and committed.basis == "persistence"
    assert committed.assessment["window"] == 23
    # A phase that turned inside the commitment still refuses read-optimized (every past path says writes come).
    early = [[0.0] * 10 + [-0.9] * (STEPS - 10) for _i in range(12)]
    assert safety.decide(make_line, 3, flat(0.95), flat(0.95), early, early, policy=policy).target != 1
    # A bad forecast still never triggers a switch under either horizon.
    forecast = {"read_ratio": [0.9] * 5 + [0.05] * (STEPS - 5)}
    bad = [[0.85] * STEPS for _i in range(20)]
    good = [[0.0] * STEPS for _i in range(20)]
    assert safety.decide(make_line, 1, forecast, flat(0.9), bad, good, policy=policy).target is None


def test_the_horizon_is_one_of_the_named_ones():
    with pytest.raises(safety.SafetyError, match="safety.horizon: 'forever' is not allowed; choose one of"):
        safety.SafetyPolicy.from_dict({"horizon": "forever"})


def test_the_commitment_is_valued_on_the_moments_whose_regime_was_as_young_as_now():
    # Nine past starts of a read phase (three episodes a commitment apart, too close for a lookahead): each phase
    # lasted 28 steps. Ten moments deep inside older read phases: each turned to writes 5 steps later.
    young = [0, 1, 2, 25, 26, 27, 50, 51, 52]
    old = [100 + 50 * i for i in range(10)]
    origins = young + old
    lasting = [0.0] * 28 + [-0.9] * (STEPS - 28)
    turning = [0.0] * 5 + [-0.9] * (STEPS - 5)
    errors = [lasting] * len(young) + [turning] * len(old)
    states = [{"read_ratio": 0.95, AGE: 0}] * len(young) + [{"read_ratio": 0.95, AGE: 30}] * len(old)
    now = {"read_ratio": 0.95, AGE: 0}
    common = dict(origins=origins, states=states, now=now)
    committed = safety.decide(make_line, 3, flat(0.95), flat(0.95), errors, errors, **common)
    assert committed.target == 1 and committed.assessment["window"] == 23
    # Over the whole window, on every moment like now's (the young ones are one episode a lookahead apart): no.
    whole = safety.SafetyPolicy(horizon="lookahead")
    assert safety.decide(make_line, 3, flat(0.95), flat(0.95), errors, errors, policy=whole, **common).target is None
    # Two episodes of young moments are not evidence enough even for the commitment.
    few = [0, 1, 2, 3, 4, 5, 25, 26, 27]
    assert (
        safety.decide(
            make_line, 3, flat(0.95), flat(0.95), errors, errors, origins=few + old, states=states, now=now
        ).target
        is None
    )


def test_a_safer_configuration_is_not_taken_before_the_risk_shows_when_a_reaction_is_as_good():
    # Read-optimized in place in a read phase; in the past half of such moments the phase turned to writes 10
    # steps later. Leaving for balanced now gains on average over the whole window against holding read-optimized
    # through the writes, but not against leaving once the writes show: staying commits the cluster to nothing.
    paths = [[0.0] * 10 + [-0.95] * (STEPS - 10) if i % 2 else [0.0] * STEPS for i in range(20)]
    origins = [i * STEPS for i in range(20)]
    assert safety.decide(make_line, 1, flat(0.95), flat(0.95), paths, paths, origins=origins).target is None
    lines = [make_line(safety.apply_errors(flat(0.95), {"read_ratio": path})) for path in paths]
    assert safety.assess(lines, 1, 3, STEPS, safety.SafetyPolicy(), origins=origins)["expected"] > 0
    assert sum(safety.against_waiting(item, 1, 3, STEPS) for item in lines) < 0
    # Once the writes show (the workload seen now favours balanced), the reaction is now: the expected gain rules.
    turned = [[0.0] * STEPS if i % 2 else [0.95] * STEPS for i in range(20)]
    decision = safety.decide(make_line, 1, flat(0.0), flat(0.0), turned, turned, origins=origins)
    assert decision.target == 3 and decision.assessment.get("safer")
    # A risk that turns faster than a reaction: the switch now gains against the later one too.
    quick = make_line({"read_ratio": [0.95] + [0.0] * (STEPS - 1)})
    assert safety.against_waiting(quick, 1, 3, STEPS) > 0


def test_a_young_regime_seen_too_seldom_at_its_level_is_valued_on_how_long_every_regime_went_on():
    # Read-optimized over balanced at the start of a read phase (age 0). Of the past moments like now, none was as
    # young (the read phases seen began before the history), so the commitment has no young moments to go on, and
    # at any age half of them turned to writes 5 steps later. The history holds three complete regimes (writes,
    # reads, writes), each 40 steps.
    origins = list(range(0, 200, 5))
    turning = [[0.0] * 5 + [-0.9] * (STEPS - 5) if o % 2 else [0.0] * STEPS for o in origins]
    states = [{"read_ratio": 0.95, AGE: 60} for _o in origins]
    now = {"read_ratio": 0.95, AGE: 0}

    def decide(history):
        return safety.decide(
            make_line,
            3,
            flat(0.95),
            flat(0.95),
            turning,
            turning,
            origins=origins,
            states=states,
            now=now,
            history=None if history is None else {"read_ratio": history},
        )

    assert decide(None).target is None
    history = [0.95] * 10 + [0.05] * 40 + [0.95] * 40 + [0.05] * 40 + [0.95]
    assert safety.regime_lengths(history) == [40, 40, 40]
    lasted = decide(history)
    assert lasted.target == 1 and lasted.assessment.get("regimes") and lasted.assessment["window"] == 23
    # Regimes that ended within the commitment: after them the read ratio worst for the switch; no switch.
    assert decide([0.95] * 10 + ([0.05] * 8 + [0.95] * 8) * 4 + [0.05] * 8 + [0.95]).target is None
    # Two complete regimes are not evidence enough.
    assert decide([0.05] * 10 + [0.95] * 40 + [0.05] * 40 + [0.95]).target is None


def test_a_cold_start_takes_a_specialised_configuration_only_when_every_longer_regime_outlasted_its_commitment():
    # Balanced in place, a write phase 2 steps old that no origin has seen (a cold start). The history: a read
    # regime seen for 50 steps (its start before the history), writes for 40, reads for 40.
    now = {"read_ratio": 0.05, AGE: 2}

    def decide(history, **settings):
        return safety.decide(
            make_line,
            3,
            flat(0.05),
            flat(0.05),
            now=now,
            history={"read_ratio": history},
            policy=safety.SafetyPolicy(**{"cold_regimes": True, "confidence": 0.75, **settings}),
        )

    # At the default confidence (0.9) the worst of the regimes is a bound only with 9 of them; at 0.75, with 3.
    assert safety.worst_of_needed(0.9) == 9 and safety.worst_of_needed(0.75) == 3
    past = [0.95] * 50 + [0.05] * 40 + [0.95] * 40
    assert (
        safety.decide(
            make_line,
            3,
            flat(0.05),
            flat(0.05),
            now=now,
            history={"read_ratio": past + [0.05] * 3},
            policy=safety.SafetyPolicy(cold_regimes=True),
        ).target
        is None
    )
    assert safety.regime_lengths(past + [0.05] * 3) == [40, 40]
    assert safety.regime_lengths(past + [0.05] * 3, first=True) == [50, 40, 40]
    # Every regime longer than now's went on for more than the commitment (3 x 30 s roll + 600 s dwell = 23 steps)
    # after now's age: write-optimized, held for its commitment, gains in the worst of them.
    taken = decide(past + [0.05] * 3)
    assert taken.basis == "cold start" and taken.target == 2
    assert taken.assessment["window"] == 23 and taken.assessment.get("cold") and "regimes" in taken.reason
    # Without the rule, or without the history, a cold start takes no specialised configuration.
    assert decide(past + [0.05] * 3, cold_regimes=False).target is None
    assert safety.decide(make_line, 3, flat(0.05), flat(0.05), now=now).target is None
    # The first regime counts: without it, two regimes longer than now's are not evidence enough.
    domain = [make_line(item) for item in safety.domain_scenarios(flat(0.05))]
    policy = safety.SafetyPolicy(cold_regimes=True)
    written = {"read_ratio": past + [0.05] * 3}
    assert safety.regime_scenarios(make_line, flat(0.05), written, 2, domain, 3, 2, policy) is None
    assert len(safety.regime_scenarios(make_line, flat(0.05), written, 2, domain, 3, 2, policy, True, 0.05)) == 3
    assert decide([0.05] * 40 + [0.95] * 40 + [0.05] * 3).target is None
    # One regime longer than now's ended inside the commitment: its worst case refuses the switch.
    assert decide([0.95] * 50 + [0.05] * 12 + [0.95] * 40 + [0.05] * 40 + [0.95] * 40 + [0.05] * 3).target is None
    # The regime of now's level must be a complete one: the first, seen only in part, counts for how long regimes
    # last, not as a regime of this kind seen to outlast now's age.
    assert decide([0.05] * 50 + [0.95] * 40 + [0.65] * 40 + [0.95] * 40 + [0.05] * 3).target is None
    # A burst longer than every burst of its level seen: the long regimes are all of another kind (the calm
    # around it), which say nothing of how long this one lasts.
    storms = {"read_ratio": [0.95] * 50 + [0.05] * 3 + [0.95] * 40 + [0.05] * 3 + [0.95] * 40 + [0.05] * 6}
    burst = {"read_ratio": 0.05, AGE: 5}
    on = safety.SafetyPolicy(cold_regimes=True, confidence=0.75)
    assert safety.decide(make_line, 3, flat(0.05), flat(0.05), now=burst, history=storms, policy=on).target is None
    assert len(safety.regime_scenarios(make_line, flat(0.05), storms, 5, domain, 3, 2, policy, True)) == 3
    assert safety.regime_scenarios(make_line, flat(0.05), storms, 5, domain, 3, 2, policy, True, 0.05) is None
    # Write-optimized in place in a write phase the history's blocks (mostly reads) do not favour: while the
    # writes go on, the long run no longer leaves it on a cold start (the option of waiting, over the domain).
    reads = {"read_ratio": [0.95] * 40 * 7 + [0.05] * 40}
    writing = {"read_ratio": 0.05, AGE: 39}
    off = safety.SafetyPolicy()
    assert not off.cold_regimes
    left = safety.decide(make_line, 2, flat(0.05), flat(0.05), now=writing, history=reads, policy=off)
    assert left.target == 3 and left.basis == "history"
    held = safety.decide(make_line, 2, flat(0.05), flat(0.05), now=writing, history=reads, policy=on)
    assert held.target is None and held.basis == "cold start"
    with pytest.raises(safety.SafetyError, match="safety.cold_regimes: 'yes' is not true or false"):
        safety.SafetyPolicy.from_dict({"cold_regimes": "yes"})
