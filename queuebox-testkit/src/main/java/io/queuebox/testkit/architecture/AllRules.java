package io.queuebox.testkit.architecture;

import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.junit.ArchTests;
import com.tngtech.archunit.lang.ArchRule;

/**
 * Every rule of {@link QueueBoxArchitecture}, for a module whose tests see all packages (the bootstrap, the
 * testkit). Include it with {@code @ArchTest static final ArchTests rules = ArchTests.in(AllRules.class);}.
 */
public final class AllRules {

    @ArchTest
    static final ArchRule ports_depend_only_on_the_jdk = QueueBoxArchitecture.ports_depend_only_on_the_jdk;

    @ArchTest
    static final ArchRule the_domain_depends_only_on_the_ports_and_the_jdk =
            QueueBoxArchitecture.the_domain_depends_only_on_the_ports_and_the_jdk;

    @ArchTest
    static final ArchRule ports_and_domain_use_no_infrastructure_library =
            QueueBoxArchitecture.ports_and_domain_use_no_infrastructure_library;

    @ArchTest
    static final ArchTests adapter_module_rules = ArchTests.in(AdapterModuleRules.class);

    @ArchTest
    static final ArchRule adapter_support_depends_on_no_adapter = QueueBoxArchitecture.adapter_support_depends_on_no_adapter;

    @ArchTest
    static final ArchRule the_bootstrap_names_no_concrete_database_adapter =
            QueueBoxArchitecture.the_bootstrap_names_no_concrete_database_adapter;

    @ArchTest
    static final ArchRule modules_are_free_of_cycles = QueueBoxArchitecture.modules_are_free_of_cycles;

    @ArchTest
    static final ArchRule the_domain_neither_reads_the_wall_clock_nor_sleeps =
            QueueBoxArchitecture.the_domain_neither_reads_the_wall_clock_nor_sleeps;

    @ArchTest
    static final ArchRule each_broker_client_is_used_only_by_its_inbox_helper =
            QueueBoxArchitecture.each_broker_client_is_used_only_by_its_inbox_helper;

    @ArchTest
    static final ArchRule adapters_do_not_depend_on_the_embedding_library =
            QueueBoxArchitecture.adapters_do_not_depend_on_the_embedding_library;

    @ArchTest
    static final ArchRule the_embedding_library_names_no_concrete_database_adapter =
            QueueBoxArchitecture.the_embedding_library_names_no_concrete_database_adapter;

    @ArchTest
    static final ArchRule the_starter_names_no_concrete_database_adapter =
            QueueBoxArchitecture.the_starter_names_no_concrete_database_adapter;

    @ArchTest
    static final ArchRule the_embedding_library_and_the_starter_carry_no_cli_demo_logging_backend_or_test_framework =
            QueueBoxArchitecture.the_embedding_library_and_the_starter_carry_no_cli_demo_logging_backend_or_test_framework;

    private AllRules() {
    }
}
