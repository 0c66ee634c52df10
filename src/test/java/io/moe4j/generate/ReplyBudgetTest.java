package io.moe4j.generate;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The one rule for a reply's room: the smaller of what its budget and its context leave. */
class ReplyBudgetTest {
    @Test
    void theContextCapsTheRoomWhenItLeavesLessThanTheBudget() {
        ReplyBudget budget = new ReplyBudget(1000, 32);
        // 20 prompt tokens, nothing generated: the context leaves 12 of the 1000.
        assertThat(budget.room(0, 20)).isEqualTo(12);
        assertThat(budget.room(5, 25)).isEqualTo(7);
        assertThat(budget.spent(11, 31)).isFalse();
        assertThat(budget.room(12, 32)).isZero();
        assertThat(budget.spent(12, 32)).isTrue();
    }

    @Test
    void theBudgetCapsTheRoomWhenItLeavesLessThanTheContext() {
        ReplyBudget budget = new ReplyBudget(4, 1 << 20);
        assertThat(budget.room(0, 100)).isEqualTo(4);
        assertThat(budget.room(3, 103)).isEqualTo(1);
        assertThat(budget.spent(4, 104)).isTrue();
    }

    @Test
    void aSequenceBeyondItsContextHasNoRoomRatherThanANegativeOne() {
        assertThat(new ReplyBudget(10, 8).room(0, 9)).isZero();
        assertThat(new ReplyBudget(10, 8).contextRoom(9)).isZero();
        assertThat(new ReplyBudget(3, 8).room(5, 2)).isZero();
    }

    @Test
    void theContextRoomIgnoresTheBudget() {
        assertThat(new ReplyBudget(2, 100).contextRoom(40)).isEqualTo(60);
    }

    @Test
    void refusesANegativeBudgetOrAnEmptyContext() {
        assertThatThrownBy(() -> new ReplyBudget(-1, 8)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max tokens");
        // a budget of 0 is a prompt scored with no reply: spent before its first token
        assertThat(new ReplyBudget(0, 8).spent(0, 3)).isTrue();
        assertThatThrownBy(() -> new ReplyBudget(1, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("context");
    }
}
