/*
 * optable.c - the operation table: every SageMaker and CloudWatch Logs operation trainyard
 * serves over JSON, and its handler (ops.h). route.c dispatches through it, the console calls
 * handlers through it, and the tests check that every row has an authorisation row (authz.c)
 * and a model (api/sagemaker.json, api/logs.json).
 */
#include "ops.h"

#include <string.h>

static const struct op_entry op_table[] = {
    {"sagemaker", "CreateTrainingJob", op_training_create},
    {"sagemaker", "DescribeTrainingJob", op_training_describe},
    {"sagemaker", "ListTrainingJobs", op_training_list},
    {"sagemaker", "StopTrainingJob", op_training_stop},
    {"sagemaker", "UpdateTrainingJob", op_training_update},
    {"sagemaker", "DeleteTrainingJob", op_training_delete},
    /* hyperparameter tuning (ops/tuning.c) */
    {"sagemaker", "CreateHyperParameterTuningJob", op_tuning_create},
    {"sagemaker", "DescribeHyperParameterTuningJob", op_tuning_describe},
    {"sagemaker", "ListHyperParameterTuningJobs", op_tuning_list},
    {"sagemaker", "StopHyperParameterTuningJob", op_tuning_stop},
    {"sagemaker", "ListTrainingJobsForHyperParameterTuningJob", op_tuning_list_training_jobs},
    {"sagemaker", "AddTags", op_tags_add},
    {"sagemaker", "ListTags", op_tags_list},
    {"sagemaker", "DeleteTags", op_tags_delete},
    /* Studio: domains, user profiles, apps, presigned domain URLs (ops/studio.c) */
    {"sagemaker", "CreateDomain", op_studio_create_domain},
    {"sagemaker", "DescribeDomain", op_studio_describe_domain},
    {"sagemaker", "ListDomains", op_studio_list_domains},
    {"sagemaker", "UpdateDomain", op_studio_update_domain},
    {"sagemaker", "DeleteDomain", op_studio_delete_domain},
    {"sagemaker", "CreateUserProfile", op_studio_create_user_profile},
    {"sagemaker", "DescribeUserProfile", op_studio_describe_user_profile},
    {"sagemaker", "ListUserProfiles", op_studio_list_user_profiles},
    {"sagemaker", "UpdateUserProfile", op_studio_update_user_profile},
    {"sagemaker", "DeleteUserProfile", op_studio_delete_user_profile},
    {"sagemaker", "CreateApp", op_studio_create_app},
    {"sagemaker", "DescribeApp", op_studio_describe_app},
    {"sagemaker", "ListApps", op_studio_list_apps},
    {"sagemaker", "DeleteApp", op_studio_delete_app},
    {"sagemaker", "CreatePresignedDomainUrl", op_studio_create_presigned_url},
    {"logs", "DescribeLogGroups", op_logs_describe_groups},
    {"logs", "DescribeLogStreams", op_logs_describe_streams},
    {"logs", "GetLogEvents", op_logs_get_events},
    {"logs", "FilterLogEvents", op_logs_filter_events},
};

const struct op_entry *op_entry_at(size_t i)
{
    return i < sizeof(op_table) / sizeof(op_table[0]) ? &op_table[i] : NULL;
}

const struct op_entry *op_lookup(const char *service, const char *name)
{
    for (size_t i = 0; service && name && i < sizeof(op_table) / sizeof(op_table[0]); i++)
        if (strcmp(op_table[i].service, service) == 0 && strcmp(op_table[i].name, name) == 0)
            return &op_table[i];
    return NULL;
}
