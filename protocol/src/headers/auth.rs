//! ACL 2.0's admin request headers (RocketMQ 5.3+, codes 3001-3010). Every field is optional
//! on the wire, as in RocketMQ (no `@CFNotNull`): a broker answers a missing user name with
//! INVALID_PARAMETER "The username is blank" itself.

use super::command_header;

command_header! {
    /// AUTH_CREATE_USER, AUTH_UPDATE_USER, AUTH_DELETE_USER and AUTH_GET_USER: the user
    /// (its `UserInfo` in the body of a create or update).
    pub struct UserRequestHeader {
        optional username: String = "username",
    }
}

command_header! {
    /// AUTH_LIST_USER: users whose name contains `filter` (all when absent).
    pub struct ListUsersRequestHeader {
        optional filter: String = "filter",
    }
}

command_header! {
    /// AUTH_CREATE_ACL, AUTH_UPDATE_ACL and AUTH_GET_ACL: the subject, `User:<name>` (its
    /// `AclInfo` in the body of a create or update).
    pub struct AclRequestHeader {
        optional subject: String = "subject",
    }
}

command_header! {
    /// AUTH_DELETE_ACL: one resource's entry (of `policyType`, Custom when absent), or the
    /// subject's whole ACL when no resource is named.
    pub struct DeleteAclRequestHeader {
        optional subject: String = "subject",
        optional policy_type: String = "policyType",
        optional resource: String = "resource",
    }
}

command_header! {
    /// AUTH_LIST_ACL: ACLs whose subject contains `subjectFilter`, with the entries whose
    /// resource contains `resourceFilter`.
    pub struct ListAclsRequestHeader {
        optional subject_filter: String = "subjectFilter",
        optional resource_filter: String = "resourceFilter",
    }
}
