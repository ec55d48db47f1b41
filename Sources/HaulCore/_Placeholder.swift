// HaulCore
