package io.queuebox.testkit.architecture;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;

/** The architecture rules on the real QueueBox classes this module sees: ports, domain and testkit. */
@AnalyzeClasses(packages = QueueBoxArchitecture.ROOT, importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    @ArchTest
    static final ArchRule ports_depend_only_on_the_jdk = QueueBoxArchitecture.ports_depend_only_on_the_jdk;

    @ArchTest
    static final ArchRule the_domain_depends_only_on_the_ports_and_the_jdk =
            QueueBoxArchitecture.the_domain_depends_only_on_the_ports_and_the_jdk;

    @ArchTest
    static final ArchRule ports_and_domain_use_no_infrastructure_library =
            QueueBoxArchitecture.ports_and_domain_use_no_infrastructure_library;

    @ArchTest
    static final ArchRule adapters_do_not_depend_on_the_domain = QueueBoxArchitecture.adapters_do_not_depend_on_the_domain;

    @ArchTest
    static final ArchRule adapters_do_not_depend_on_each_other = QueueBoxArchitecture.adapters_do_not_depend_on_each_other;

    @ArchTest
    static final ArchRule adapters_do_not_depend_on_the_bootstrap =
            QueueBoxArchitecture.adapters_do_not_depend_on_the_bootstrap;

    @ArchTest
    static final ArchRule adapter_support_depends_on_no_adapter = QueueBoxArchitecture.adapter_support_depends_on_no_adapter;

    @ArchTest
    static final ArchRule modules_are_free_of_cycles = QueueBoxArchitecture.modules_are_free_of_cycles;

    @ArchTest
    static final ArchRule the_domain_neither_reads_the_wall_clock_nor_sleeps =
            QueueBoxArchitecture.the_domain_neither_reads_the_wall_clock_nor_sleeps;

    @ArchTest
    static final ArchRule only_the_bootstrap_reads_environment_variables_and_system_properties =
            QueueBoxArchitecture.only_the_bootstrap_reads_environment_variables_and_system_properties;
}
