package io.queuebox.testkit.architecture;

import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.junit.ArchTests;

/** The architecture rules on the real QueueBox classes this module sees: ports, domain and testkit. */
@AnalyzeClasses(packages = QueueBoxArchitecture.ROOT, importOptions = ImportOption.DoNotIncludeTests.class)
class ArchitectureTest {

    @ArchTest
    static final ArchTests rules = ArchTests.in(AllRules.class);
}
