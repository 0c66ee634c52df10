package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The {@code moe4j.cuda.earlyLaunch} list (no device needed): which short kernels of a one-row pass launch early. */
class EarlyLaunchRolesTest {

    @Test
    void aListNamesTheRolesAndNoneOrBlankNamesNone() {
        assertThat(ModelOps.earlyLaunchRoles("select,activate")).containsExactlyInAnyOrder("select", "activate");
        assertThat(ModelOps.earlyLaunchRoles(" select , select,activate")).containsExactlyInAnyOrder("select",
                "activate");
        assertThat(ModelOps.earlyLaunchRoles("none")).isEmpty();
        assertThat(ModelOps.earlyLaunchRoles(" ")).isEmpty();
    }

    @Test
    void allNamesEveryShortKernelOfTheChain() {
        assertThat(ModelOps.earlyLaunchRoles("all")).containsExactlyInAnyOrder("norm", "position", "attend",
                "router", "select", "plan", "activate", "combine");
    }

    @Test
    void anUnknownRoleIsRefusedByName() {
        assertThatThrownBy(() -> ModelOps.earlyLaunchRoles("select,gemv"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("moe4j.cuda.earlyLaunch")
                .hasMessageContaining("'gemv'");
    }
}
