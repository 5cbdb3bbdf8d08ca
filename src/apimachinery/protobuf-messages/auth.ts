// Wire messages of rbac.authorization/v1, authorization/v1 and authentication/v1 (and v1beta1's
// SelfSubjectReview) (notation: ./schema.ts).

import type { PackageText } from './schema.js';

export const rbacPackages: readonly PackageText[] = [
  {
    name: 'rbac.v1',
    groupPrefix: 'rbac.authorization',
    version: 'v1',
    text: `
      PolicyRule {
        verbs:[string]! 1; apiGroups:[string] 2; resources:[string] 3; resourceNames:[string] 4;
        nonResourceURLs:[string] 5
      }
      Subject { kind 1; apiGroup 2; name 3; namespace 4 }
      RoleRef { apiGroup 1; kind 2; name 3 }
      AggregationRule { clusterRoleSelectors:[LabelSelector] 1 }
      kind Role { metadata:ObjectMeta 1; rules:[PolicyRule]! 2 }
      kind RoleList { metadata:ListMeta 1; items:[Role] 2 }
      kind ClusterRole { metadata:ObjectMeta 1; rules:[PolicyRule]! 2; aggregationRule:AggregationRule? 3 }
      kind ClusterRoleList { metadata:ListMeta 1; items:[ClusterRole] 2 }
      kind RoleBinding { metadata:ObjectMeta 1; subjects:[Subject] 2; roleRef:RoleRef 3 }
      kind RoleBindingList { metadata:ListMeta 1; items:[RoleBinding] 2 }
      kind ClusterRoleBinding { metadata:ObjectMeta 1; subjects:[Subject] 2; roleRef:RoleRef 3 }
      kind ClusterRoleBindingList { metadata:ListMeta 1; items:[ClusterRoleBinding] 2 }
    `,
  },
];

export const authorizationPackages: readonly PackageText[] = [
  {
    name: 'authorization.v1',
    groupPrefix: 'authorization',
    version: 'v1',
    text: `
      ExtraValue { items:[string] 1 }
      ResourceAttributes {
        namespace 1; verb 2; group 3; version 4; resource 5; subresource 6; name 7;
        fieldSelector:FieldSelectorAttributes? 8; labelSelector:LabelSelectorAttributes? 9
      }
      FieldSelectorAttributes { rawSelector 1; requirements:[FieldSelectorRequirement] 2 }
      FieldSelectorRequirement { key 1; operator 2; values:[string] 3 }
      LabelSelectorAttributes { rawSelector 1; requirements:[LabelSelectorRequirement] 2 }
      NonResourceAttributes { path 1; verb 2 }
      SubjectAccessReviewSpec {
        resourceAttributes:ResourceAttributes? 1; nonResourceAttributes:NonResourceAttributes? 2; user 3;
        groups:[string] 4; extra:<ExtraValue> 5; uid 6
      }
      SubjectAccessReviewStatus { allowed:bool! 1; denied:bool 4; reason 2; evaluationError 3 }
      SelfSubjectAccessReviewSpec {
        resourceAttributes:ResourceAttributes? 1; nonResourceAttributes:NonResourceAttributes? 2
      }
      kind SubjectAccessReview {
        metadata:ObjectMeta 1; spec:SubjectAccessReviewSpec 2; status:SubjectAccessReviewStatus 3
      }
      kind LocalSubjectAccessReview {
        metadata:ObjectMeta 1; spec:SubjectAccessReviewSpec 2; status:SubjectAccessReviewStatus 3
      }
      kind SelfSubjectAccessReview {
        metadata:ObjectMeta 1; spec:SelfSubjectAccessReviewSpec 2; status:SubjectAccessReviewStatus 3
      }
      SelfSubjectRulesReviewSpec { namespace 1 }
      ResourceRule { verbs:[string]! 1; apiGroups:[string] 2; resources:[string] 3; resourceNames:[string] 4 }
      NonResourceRule { verbs:[string]! 1; nonResourceURLs:[string] 2 }
      SubjectRulesReviewStatus {
        resourceRules:[ResourceRule] 1; nonResourceRules:[NonResourceRule] 2; incomplete:bool! 3; evaluationError 4
      }
      kind SelfSubjectRulesReview {
        metadata:ObjectMeta 1; spec:SelfSubjectRulesReviewSpec 2; status:SubjectRulesReviewStatus 3
      }
    `,
  },
];

export const authenticationPackages: readonly PackageText[] = [
  {
    name: 'authentication.v1',
    groupPrefix: 'authentication',
    version: 'v1',
    text: `
      ExtraValue { items:[string] 1 }
      UserInfo { username 1; uid 2; groups:[string] 3; extra:<ExtraValue> 4 }
      TokenReviewSpec { token 1; audiences:[string] 2 }
      TokenReviewStatus { authenticated:bool 1; user:UserInfo 2; audiences:[string] 4; error 3 }
      kind TokenReview { metadata:ObjectMeta 1; spec:TokenReviewSpec 2; status:TokenReviewStatus 3 }
      SelfSubjectReviewStatus { userInfo:UserInfo 1 }
      kind SelfSubjectReview { metadata:ObjectMeta 1; status:SelfSubjectReviewStatus 2 }
      BoundObjectReference { kind 1; apiVersion 2; name 3; uid 4 }
      TokenRequestSpec { audiences:[string] 1; expirationSeconds:int64? 4; boundObjectRef:BoundObjectReference? 3 }
      TokenRequestStatus { token 1; expirationTimestamp:Time 2 }
      kind TokenRequest { metadata:ObjectMeta 1; spec:TokenRequestSpec 2; status:TokenRequestStatus 3 }
    `,
  },
  {
    // Served only when --runtime-config turns it on (deprecated in 1.30): its status holds a v1 UserInfo.
    name: 'authentication.v1beta1',
    groupPrefix: 'authentication',
    version: 'v1beta1',
    text: `
      SelfSubjectReviewStatus { userInfo:authentication.v1.UserInfo 1 }
      kind SelfSubjectReview { metadata:ObjectMeta 1; status:SelfSubjectReviewStatus 2 }
    `,
  },
];
