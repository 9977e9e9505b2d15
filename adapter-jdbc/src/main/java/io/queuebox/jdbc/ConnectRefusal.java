package io.queuebox.jdbc;

/**
 * Why a database refused a connection in a way no retry fixes, so the jar reports the setting at fault
 * instead of waiting for the database: see {@link DatabaseProvider#refusal}.
 */
public enum ConnectRefusal {
    /** The password was wrong. */
    PASSWORD,
    /** The login was refused for the account (unknown user, no access, or a wrong password the database does not tell apart). */
    ACCOUNT,
    /** The database named in the URL does not exist or may not be opened. */
    DATABASE
}
