package io.queuebox.testkit.architecture;

import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

/**
 * The rules an adapter module applies to its own classes. Include them in the module's test with
 * {@code @AnalyzeClasses(packages = "io.queuebox.<adapter>", importOptions = DoNotIncludeTests.class)} and
 * {@code @ArchTest static final ArchTests rules = ArchTests.in(AdapterModuleRules.class);}.
 */
public final class AdapterModuleRules {

    @ArchTest
    static final ArchRule adapters_do_not_depend_on_the_domain = QueueBoxArchitecture.adapters_do_not_depend_on_the_domain;

    @ArchTest
    static final ArchRule adapters_do_not_depend_on_each_other = QueueBoxArchitecture.adapters_do_not_depend_on_each_other;

    @ArchTest
    static final ArchRule adapters_do_not_depend_on_the_bootstrap =
            QueueBoxArchitecture.adapters_do_not_depend_on_the_bootstrap;

    @ArchTest
    static final ArchRule only_the_bootstrap_reads_environment_variables_and_system_properties =
            QueueBoxArchitecture.only_the_bootstrap_reads_environment_variables_and_system_properties;

    private AdapterModuleRules() {
    }
}
